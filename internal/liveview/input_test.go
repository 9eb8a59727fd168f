package liveview

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

func TestNormalizeURL(t *testing.T) {
	for in, want := range map[string]string{
		"example.com/a":        "https://example.com/a",
		" localhost:8080/x ":   "http://localhost:8080/x",
		"http://10.0.0.1/":     "http://10.0.0.1/",
		"about:blank":          "about:blank",
		"javascript:alert(1)":  "http://javascript:alert(1)", // never a script: a host the Router refuses
		"":                     "",
		"169.254.169.254/meta": "https://169.254.169.254/meta",
	} {
		assert.Equal(t, want, normalizeURL(in), in)
	}
}

func TestKeyEvents(t *testing.T) {
	evs := keyEvents("a", 0)
	if assert.Len(t, evs, 3) {
		assert.Equal(t, "a", evs[1].Text, "a printable key types itself")
	}
	evs = keyEvents("Enter", 0)
	if assert.NotEmpty(t, evs) {
		assert.Equal(t, "Enter", evs[0].Key)
	}
	for _, ev := range keyEvents("a", int64(chromedp.ModifierCtrl)) {
		assert.Empty(t, ev.Text, "a chord types nothing")
		assert.Equal(t, int64(chromedp.ModifierCtrl), ev.Modifiers)
	}
	assert.Empty(t, keyEvents("NoSuchKey", 0))
}

func TestOnlyLoopbackUnlessRemote(t *testing.T) {
	for _, tc := range []struct {
		remote string
		opt    bool
		want   int
	}{
		{"192.0.2.1:1234", false, http.StatusForbidden},
		{"127.0.0.1:1234", false, http.StatusNotFound}, // let in: no such view
		{"[::1]:1234", false, http.StatusNotFound},
		{"192.0.2.1:1234", true, http.StatusNotFound},
	} {
		s := New(Options{AllowHosts: []string{"view.example:80"}, Remote: tc.opt})
		req := httptest.NewRequest(http.MethodGet, "http://view.example:80/sometoken", nil)
		req.RemoteAddr = tc.remote
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		assert.Equal(t, tc.want, w.Code, "%s remote=%v", tc.remote, tc.opt)
	}
}
