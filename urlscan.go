package hybroute

import "github.com/hybroute/hybroute/internal/urlscan"

// ScanURLs returns the URL literals in code, in order of first appearance,
// deduplicated: the URLs Plan and Exec decide on. code may be in any
// language an agent writes (JavaScript, TypeScript, Python, Go, shell,
// JSON, HTML); the scan knows none of them and looks only at what surrounds
// each ':' and each "//", and at the '\' and '&' that may spell one.
//
// It reports URLs of the schemes http, https, ws, wss, ftp, file, chrome,
// chrome-untrusted, devtools and view-source, and data: URLs; bare
// host:port tokens and scheme-relative "//host" URLs, as http, where they
// may name a local host. Each is normalised the way Chromium reads it: the
// scheme lower-cased, its slashes folded to "//", string escapes, HTML
// character references and the tabs and newlines Chromium strips decoded
// (in the scheme name too), a template placeholder ending the URL, trailing
// punctuation dropped. A URL whose host is a placeholder has no literal
// host and is not reported. Where the source can be read more than one way,
// every reading is reported, so that the call fails closed.
//
// Plan reads the documents of the data: URLs as well: the URLs they name
// get verdicts of their own.
//
// Results are substrings of code wherever no normalisation was needed. It
// returns nil when code holds no URL.
func ScanURLs(code string) []string { return urlscan.Scan(code) }
