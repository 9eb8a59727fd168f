package agenttest

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"net/http"
)

// pages are the site's pages, testdata/*.html: html/templates, so that what
// a page echoes from its request is escaped.
//
//go:embed testdata/*.html
var pageFiles embed.FS

var pages = template.Must(template.ParseFS(pageFiles, "testdata/*.html"))

// Shop is the shop site, the one the toolset's tests, the command's tests
// and the agent example work on:
//
//	/           the shop page (testdata/home.html): a heading, a form, a
//	            button that changes the page, a link, a tall page, console output
//	/search     the result of the search form (its q in the title)
//	/page2      a second page
//	/api/stock  JSON: the stock of two products, one sold out
//	/big        a page with n list items (?n=, default 500)
func Shop() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", pageAt("/", "home"))
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		ServePage(w, "search", r.URL.Query().Get("q"))
	})
	mux.HandleFunc("/page2", pageAt("/page2", "page2"))
	mux.HandleFunc("/api/stock", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"items":[{"sku":"A1","left":3},{"sku":"B2","left":0}]}`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n := 500
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		ServePage(w, "big", make([]struct{}, n))
	})
	return mux
}

// ServePage writes the page name (testdata/name.html of this package)
// filled with data, for the tests that serve a page of their own.
func ServePage(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name+".html", data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// pageAt serves the page name at path only, and 404 below it.
func pageAt(path, name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		ServePage(w, name, nil)
	}
}
