package main

import (
	"net"
	"net/http"
)

// loadPage is the page every client drives: it loads at once (no
// subresource), and a click on its button changes its heading, which the
// exec step reads back.
const loadPage = `<!doctype html>
<html><head><title>load</title></head>
<body>
<h1 id="h">ready</h1>
<button onclick="document.getElementById('h').textContent = 'clicked'">Press me</button>
</body></html>`

// servePage serves loadPage on a loopback port and returns its URL and a
// stop function.
func servePage() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(loadPage))
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/", func() { _ = srv.Close() }, nil
}
