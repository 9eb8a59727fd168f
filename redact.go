package hybroute

import "github.com/hybroute/hybroute/internal/redact"

// Redaction: API keys, signing keys and URL tokens never appear in an error
// or a log line, in any of the forms a URL or an error quotes them
// (internal/redact lists the spellings), and a URL is printed only through
// redact.Display (a refusal prints it so, netpolicy.BlockedError) or, for a
// provider's CDP URL, redactURL.

// redactURL returns a provider's CDP URL fit for a log line: userinfo and
// fragment dropped, every query value (tokens, API keys, signing keys,
// session ids) replaced by REDACTED. A string that does not parse as a URL
// comes back as "[unparseable URL]".
func redactURL(s string) string { return redact.URL(s) }
