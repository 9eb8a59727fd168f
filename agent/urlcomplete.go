package agent

import (
	"net/netip"
	"strings"
)

// CompleteURL completes what a model writes in an address bar the way
// Chromium's omnibox does, before any verdict is taken on it: a URL with a
// scheme stays as it is; a bare host gets http:// when it is localhost, a
// *.localhost name, an IP address or a single label with a port (names that
// only mean something on this machine or its network), and https://
// otherwise. A bare host with nothing after it gets a "/" path.
//
//	localhost:3000       → http://localhost:3000/
//	127.0.0.1:8080/app   → http://127.0.0.1:8080/app
//	example.com          → https://example.com/
//	https://example.com  → https://example.com
func CompleteURL(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || hasScheme(s) {
		return s
	}
	if strings.HasPrefix(s, "//") {
		return "https:" + s
	}
	end := strings.IndexAny(s, "/?#")
	authority, rest := s, ""
	if end >= 0 {
		authority, rest = s[:end], s[end:]
	}
	if rest == "" {
		rest = "/"
	}
	host, port := splitAuthority(authority)
	scheme := "https://"
	if plainHTTPHost(host, port) {
		scheme = "http://"
	}
	return scheme + authority + rest
}

// hasScheme reports whether s starts with a scheme a model means as one:
// anything followed by "://", or one of the schemes written without
// slashes. "localhost:3000" has none: that is a host and a port.
func hasScheme(s string) bool {
	i := strings.Index(s, ":")
	if i <= 0 {
		return false
	}
	for j, r := range s[:i] {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' ||
			j > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')
		if !ok {
			return false
		}
	}
	if strings.HasPrefix(s[i:], "://") || strings.HasPrefix(s[i:], ":\\\\") {
		return true
	}
	switch strings.ToLower(s[:i]) {
	case "about", "data", "javascript", "blob", "file", "mailto", "chrome", "view-source", "http", "https", "ws", "wss", "ftp":
		return true
	}
	return false
}

// splitAuthority returns the host and port of an authority, dropping any
// userinfo.
func splitAuthority(a string) (host, port string) {
	if i := strings.LastIndex(a, "@"); i >= 0 {
		a = a[i+1:]
	}
	if strings.HasPrefix(a, "[") {
		if i := strings.Index(a, "]"); i > 0 {
			host, rest := a[:i+1], a[i+1:]
			return host, strings.TrimPrefix(rest, ":")
		}
		return a, ""
	}
	if i := strings.LastIndex(a, ":"); i >= 0 {
		return a[:i], a[i+1:]
	}
	return a, ""
}

func plainHTTPHost(host, port string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	switch {
	case h == "localhost" || strings.HasSuffix(h, ".localhost"):
		return true
	case strings.HasPrefix(h, "["):
		return true // an IPv6 literal
	case numericHost(h):
		return true // an IPv4 address in any of the forms Chromium reads
	case !strings.Contains(h, ".") && port != "":
		return true // intranet-style "devbox:8080"
	}
	return false
}

// numericHost reports whether h is an IPv4 address as Chromium's parser
// reads one: dotted, or with hex/octal/short parts ("0x7f.1", "2130706433").
func numericHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "" {
		return false
	}
	for _, part := range strings.Split(h, ".") {
		p := strings.ToLower(part)
		if p == "" {
			return false
		}
		if strings.HasPrefix(p, "0x") {
			p = p[2:]
			for _, r := range p {
				if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
					return false
				}
			}
			continue
		}
		for _, r := range p {
			if r < '0' || r > '9' {
				return false
			}
		}
	}
	return true
}
