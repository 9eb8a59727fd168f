package main

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// smallPage is the small page of the session: a heading, a text field and
// a button whose click changes the heading.
const smallPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bench shop</title></head>
<body>
<h1 id="h">Bench shop</h1>
<p>Cart: 0 items</p>
<label for="q">Search products</label> <input id="q" type="search">
<button onclick="document.getElementById('h').textContent = 'Added'">Add to cart</button>
<a href="/catalogue">Catalogue</a>
</body></html>`

// cataloguePage is the 1,500-node catalogue: 300 list items with a link and
// a button each, the page agent/bench_test.go measures as catalogue300.
func cataloguePage(n int) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><title>Catalogue</title><h1>Catalogue</h1><nav><a href="/">Home</a> <a href="/page2">Next</a></nav><ul>`)
	for i := range n {
		fmt.Fprintf(&b, `<li><a href="/item/%d">Item %d</a> <button>Add %d</button></li>`, i, i, i)
	}
	b.WriteString(`</ul>`)
	return b.String()
}

// servePages serves the pages on a loopback port and returns the base URL
// and a stop function.
func servePages() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	catalogue := cataloguePage(300)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			_, _ = w.Write([]byte(smallPage))
		case "/catalogue":
			_, _ = w.Write([]byte(catalogue))
		case "/favicon.ico":
			w.WriteHeader(http.StatusNoContent)
		default:
			_, _ = w.Write([]byte(`<!doctype html><title>Item</title><h1>Item</h1>`))
		}
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}
