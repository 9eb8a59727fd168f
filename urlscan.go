package hybroute

import "github.com/hybroute/hybroute/internal/urlscan"

// ScanURLs returns the URL literals in code, in order of first appearance,
// deduplicated. code may be in any language an agent writes (JavaScript,
// TypeScript, Python, Go, shell, JSON, HTML); the scan knows none of them
// and looks only at what surrounds each ':' and each "//".
//
// It reports absolute URLs of the schemes http, https, ws, wss, ftp, file,
// chrome, chrome-untrusted, devtools and view-source, in any case; bare
// host:port tokens whose host is localhost, *.localhost, a dotted IPv4
// literal or a bracketed IPv6 literal (reported as http); and
// scheme-relative "//host..." URLs whose host is an IPv4 or bracketed IPv6
// literal, localhost, *.localhost or a metadata name (reported as http).
// Results are normalised the way Chromium would read them: the scheme is
// lower-cased, any run of '/' and '\' after it becomes "//", string escapes
// and (in the authority) HTML character references are decoded, a template
// placeholder ends the URL, and trailing punctuation is dropped. A URL whose
// host is itself a placeholder is not reported, because there is no literal
// host to judge. When the source is ambiguous (a backslash-escaped dot or
// letter in the host, a tab or newline inside the authority, a userinfo the
// browser would read past a space or quote) every reading is reported.
//
// Results are substrings of code wherever no normalisation was needed. It
// returns nil when code holds no URL.
func ScanURLs(code string) []string { return urlscan.Scan(code) }
