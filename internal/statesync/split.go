package statesync

import (
	"strings"

	"github.com/hybroute/hybroute/state"
)

// Split parts st into what may go to one browser (kept) and what may not
// (dropped). allowed decides, for a URL of a cookie's host or of an
// origin, whether the browser may hold it; it is asked once per URL. With
// allCookies (the local browser) every cookie is kept without asking.
func Split(st *state.State, allCookies bool, allowed func(rawURL string) bool) (kept, dropped *state.State) {
	kept, dropped = &state.State{}, &state.State{}
	if st == nil {
		return kept, dropped
	}
	seen := map[string]bool{}
	ok := func(rawURL string) bool {
		v, done := seen[rawURL]
		if !done {
			v = allowed(rawURL)
			seen[rawURL] = v
		}
		return v
	}
	for _, c := range st.Cookies {
		if allCookies || ok(cookieURL(c.Domain)) {
			kept.Cookies = append(kept.Cookies, c)
		} else {
			dropped.Cookies = append(dropped.Cookies, c)
		}
	}
	for _, o := range st.Clone().Origins {
		if ok(o.Origin + "/") {
			kept.Origins = append(kept.Origins, o)
		} else {
			dropped.Origins = append(dropped.Origins, o)
		}
	}
	return kept, dropped
}

// cookieURL is a URL of the host a cookie's domain names.
func cookieURL(domain string) string {
	host := strings.TrimPrefix(domain, ".")
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return "https://" + host + "/"
}

// OriginsOf lists the origins of st.
func OriginsOf(st *state.State) []string {
	if st == nil {
		return nil
	}
	out := make([]string, len(st.Origins))
	for i, o := range st.Origins {
		out[i] = o.Origin
	}
	return out
}

// Carried is the state loaded for a key once the cookies of the browser
// session it leaves (cookies) are carried over: what of loaded's cookies
// that browser could not hold (beyond) stays as loaded, the rest is what
// the browser holds now.
func Carried(loaded, beyond *state.State, cookies []state.Cookie) *state.State {
	merged := beyond.Merge(&state.State{Cookies: cookies})
	next := loaded.Clone()
	next.Cookies = merged.Cookies
	return next
}
