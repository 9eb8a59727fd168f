// Package hybroutegenkit gives hybroute's browser tools (package agent) to
// Genkit Go: each tool of a Toolset becomes a Genkit tool with the same
// name, description and JSON Schema, which genkit.Generate can offer a
// model and run in its tool loop.
//
// A tool's output is the text the toolset returns for the model (what the
// call did, where it ran, which page it is on); a screenshot comes with it
// as a media part. A tool error the model can act on (a refused URL, a
// stale ref) is such a text too, not a Go error: the model reads it and
// goes on. A Go error ends the generation: the toolset closed, or the
// arguments were not JSON.
//
// Every call runs in a browser session named by its key: the one
// WithSessionKey put in the context, else Options.SessionKey, else
// "default". Calls with one key share the browser's pages; the caller
// ends a session with Toolset.Release.
//
// This is a module of its own, so that a program using hybroute without
// Genkit pulls in none of Genkit.
package hybroutegenkit
