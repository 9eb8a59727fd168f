// Package hostguard refuses HTTP requests whose Host or Origin names
// another server: what a loopback server (the MCP endpoint, the live view)
// needs against web pages the user visits, which can make the browser send
// requests to a loopback port, and, with DNS rebinding, point their own
// name there too. Such requests carry the page's name in Host and its
// origin in Origin.
package hostguard

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Wrap refuses, with 403, requests whose Host or Origin is not the
// server's own, and passes the others to next.
//
// The server's own names are the address the request arrived on (from
// the http.Server's http.LocalAddrContextKey), with 127.0.0.1, localhost
// and [::1] when that is loopback, and allowHosts (a name without a port
// takes the arriving port). A request with no local address is allowed
// only by allowHosts with a port.
func Wrap(allowHosts []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := ownHosts(r, allowHosts)
		if !allowed[strings.ToLower(r.Host)] {
			http.Error(w, "hybroute: forbidden: the Host header names another server", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !allowed[strings.ToLower(u.Host)] {
				http.Error(w, "hybroute: forbidden: cross-origin request", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ownHosts are the host:port names a request to this server may carry.
func ownHosts(r *http.Request, allowHosts []string) map[string]bool {
	bound, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	port := ""
	if bound != nil {
		port = fmt.Sprint(bound.Port)
	}
	allowed := map[string]bool{}
	add := func(h string) {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			return
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			if port == "" {
				return
			}
			h = net.JoinHostPort(strings.Trim(h, "[]"), port)
		}
		allowed[h] = true
	}
	if bound != nil {
		add(bound.String())
		if bound.IP.IsLoopback() {
			for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
				add(h)
			}
		}
	}
	for _, h := range allowHosts {
		add(h)
	}
	return allowed
}
