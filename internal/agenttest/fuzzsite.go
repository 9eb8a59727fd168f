package agenttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// NewFuzzSite serves every kind of page the toolset fuzzer
// (internal/toolfuzz) sends a model to, on 127.0.0.1, closed in t.Cleanup:
//
//	/, /search, /page2, /big   the shop (Shop)
//	/input, /popup             the input page and the page its links open (NewInputSite)
//	/form                      a sign-up form that posts to /form/done, and a download link
//	/table                     a table of invoices whose rows go away
//	/dialog                    buttons that open dialogs; ?now=1 opens one while loading
//	/opener                    links and buttons that open tabs; ?now=1 opens one while loading
//	/slow                      a page after ?ms= milliseconds (at most 3000)
//	/moving                    a page that navigates itself ?n= times, 120 ms apart
//	/reach                     a page that reaches for addresses the session never named
//	/download                  a CSV file, as an attachment
func NewFuzzSite(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	shop := Shop()
	for _, p := range []string{"/", "/search", "/page2", "/big", "/api/stock"} {
		mux.Handle(p, shop)
	}
	mux.HandleFunc("/input", func(w http.ResponseWriter, r *http.Request) { ServePage(w, "input", nil) })
	mux.HandleFunc("/popup", func(w http.ResponseWriter, r *http.Request) {
		ServePage(w, "popup", r.URL.Query().Get("who"))
	})
	mux.HandleFunc("/stock", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "in stock") })
	mux.HandleFunc("/form", pageAt("/form", "form"))
	mux.HandleFunc("/form/done", func(w http.ResponseWriter, r *http.Request) {
		ServePage(w, "done", r.FormValue("email"))
	})
	mux.HandleFunc("/table", pageAt("/table", "table"))
	mux.HandleFunc("/dialog", func(w http.ResponseWriter, r *http.Request) {
		ServePage(w, "dialog", r.URL.Query().Get("now") == "1")
	})
	mux.HandleFunc("/opener", func(w http.ResponseWriter, r *http.Request) {
		ServePage(w, "opener", r.URL.Query().Get("now") == "1")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(min(max(ms, 0), 3000)) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		ServePage(w, "page2", nil)
	})
	mux.HandleFunc("/moving", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		n = min(max(n, 0), 10)
		ServePage(w, "moving", struct{ N, Next int }{n, max(n-1, 0)})
	})
	mux.HandleFunc("/reach", pageAt("/reach", "reach"))
	mux.HandleFunc("/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/csv")
		w.Header().Set("Content-Disposition", `attachment; filename="prices.csv"`)
		fmt.Fprint(w, "sku,price\nA1,3.50\nB2,7.00\n")
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}
