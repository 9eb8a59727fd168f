// Package mcpserver serves hybroute's browser toolset (package agent) over
// the Model Context Protocol, with the official MCP Go SDK.
//
// One Server serves any number of client sessions, each with a browser
// session of its own (released when the client session ends), over any of
// the SDK's transports:
//
//   - in process: Connect with one end of mcp.NewInMemoryTransports, and
//     connect an mcp.Client (or a framework built on the SDK, such as ADK
//     Go's MCP toolset) to the other end;
//   - stdio: Run with mcp.StdioTransport, as "hybroute mcp" does;
//   - streamable HTTP: Handler, or Serve on a listener, which answer only
//     their own Host and Origin (see HostGuard).
//
// A tool result carries the toolset's text and images as MCP content, and
// where the call ran under the _meta key MetaWhere.
//
// The command github.com/hybroute/hybroute/cmd/hybroute is flags over this
// package.
package mcpserver
