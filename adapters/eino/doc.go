// Package hybrouteeino gives hybroute's browser tools (package agent) to
// Eino: each tool of a Toolset becomes a tool.InvokableTool with the same
// name and description, and its JSON Schema as the parameters, for a
// compose.ToolsNode or a react agent.
//
// A tool's result is the text the toolset returns for the model (what the
// call did, where it ran, which page it is on). Tools' InvokableTools
// return text alone; MultimodalTools' EnhancedInvokableTools add the
// images (a screenshot) as image parts. A tool error the model
// can act on (a refused URL, a stale ref) is such a text too, not a Go
// error: the model reads it and goes on. A Go error ends the run: the
// toolset closed, or the arguments were not JSON.
//
// Every call runs in a browser session named by its key: the one
// WithSessionKey put in the context, else Options.SessionKey, else
// "default". Calls with one key share the browser's pages; the caller
// ends a session with Toolset.Release.
//
// This is a module of its own, so that a program using hybroute without
// Eino pulls in none of Eino.
package hybrouteeino
