package agenttest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// NewInputSite serves the page the input, tab and dialog tools are tested
// on, on 127.0.0.1, closed in t.Cleanup:
//
//	/        testdata/input.html: fields of every kind, a hover menu, drags, a file
//	         input, text that comes and goes, links that open tabs, dialogs
//	/popup   a page a tab opens
func NewInputSite(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/", pageAt("/", "input"))
	mux.HandleFunc("/popup", func(w http.ResponseWriter, r *http.Request) {
		ServePage(w, "popup", r.URL.Query().Get("who"))
	})
	mux.HandleFunc("/stock", func(w http.ResponseWriter, r *http.Request) {
		// Slow, as a real API is: an action that starts it waits for it.
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "in stock: "+htmlEscape(r.URL.Query().Get("size")))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
