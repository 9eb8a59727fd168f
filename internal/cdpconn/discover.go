package cdpconn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/hybroute/hybroute/internal/redact"
)

// maxVersionBytes bounds the /json/version answer Discover reads; Chromium's
// is a few hundred bytes.
const maxVersionBytes = 1 << 20

// Resolve turns a provider's CDP endpoint into the websocket URL to dial: a
// ws or wss URL comes back as given (after checking it parses and has a
// host), an http or https URL goes through Discover. Any other scheme is
// ErrInvalidURL.
func Resolve(ctx context.Context, client *http.Client, rawURL string, allowedHosts []string) (string, error) {
	u, err := url.Parse(rawURL)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return Discover(ctx, client, rawURL, allowedHosts)
	}
	if _, err := parseEndpoint(rawURL, "ws", "wss", "http", "https"); err != nil {
		return "", fail(redact.FromURL(rawURL), ErrInvalidURL, "cdpconn: CDP URL "+redact.URL(rawURL), err)
	}
	return rawURL, nil
}

// Discover asks an HTTP CDP endpoint (Browser Use's https cdpUrl, a
// browserless or self-hosted Chromium) for its browser websocket: it GETs
// <httpURL>/json/version on httpURL's own scheme, keeping its query (a
// token), with client (nil means http.DefaultClient; redirects are
// refused), and checks the webSocketDebuggerUrl of the answer before
// returning it:
//
//   - its scheme is ws or wss, and wss when httpURL is https;
//   - its host is httpURL's host, or one of allowedHosts (a name, or
//     "*.example.com" for any name under example.com);
//   - a missing, empty or malformed value is ErrDiscovery, never a panic.
//
// When the websocket is on httpURL's own host, the query parameters of
// httpURL that it lacks are added to it (a token the endpoint needs on the
// websocket too); they are never handed to another host.
func Discover(ctx context.Context, client *http.Client, httpURL string, allowedHosts []string) (string, error) {
	sec := redact.FromURL(httpURL)
	name := "cdpconn: CDP endpoint " + redact.URL(httpURL)
	base, err := parseEndpoint(httpURL, "http", "https")
	if err != nil {
		return "", fail(sec, ErrInvalidURL, name, err)
	}
	if err := checkCleartext(base); err != nil {
		return "", fail(sec, ErrCleartext, name, err)
	}
	vu := *base
	vu.Path = strings.TrimRight(base.Path, "/") + "/json/version"
	vu.RawPath = ""
	vu.Fragment, vu.RawFragment = "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, vu.String(), nil)
	if err != nil {
		return "", fail(sec, ErrDiscovery, name, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "hybroute")
	if client == nil {
		client = http.DefaultClient
	}
	hc := *client
	hc.CheckRedirect = refuseRedirect
	resp, err := hc.Do(req)
	if err != nil {
		return "", fail(sec, ErrDiscovery, name+": GET /json/version", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVersionBytes+1))
	if err != nil {
		return "", fail(sec, ErrDiscovery, name+": reading /json/version", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", withStatus(fail(sec, ErrDiscovery, fmt.Sprintf("%s: /json/version answered HTTP %d", name, resp.StatusCode), nil), resp.StatusCode)
	}
	if len(body) > maxVersionBytes {
		return "", fail(sec, ErrDiscovery, fmt.Sprintf("%s: /json/version answer larger than %d bytes", name, maxVersionBytes), nil)
	}
	var v struct {
		WebSocketDebuggerURL *string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fail(sec, ErrDiscovery, name+": decoding /json/version", err)
	}
	if v.WebSocketDebuggerURL == nil || *v.WebSocketDebuggerURL == "" {
		return "", fail(sec, ErrDiscovery, name+": /json/version has no webSocketDebuggerUrl", nil)
	}
	return checkDiscovered(base, *v.WebSocketDebuggerURL, allowedHosts, sec, name)
}

// checkDiscovered vets the webSocketDebuggerUrl raw that base's
// /json/version answered, and adds base's query where it belongs.
func checkDiscovered(base *url.URL, raw string, allowedHosts []string, sec redact.Secrets, name string) (string, error) {
	// The answer is the provider's text: it may echo the token, so it is
	// scrubbed of base's secrets and named only in redacted form.
	sec = sec.With(redact.FromURL(raw))
	ws, err := parseEndpoint(raw, "ws", "wss")
	if err != nil {
		return "", fail(sec, ErrDiscovery, fmt.Sprintf("%s: webSocketDebuggerUrl %s", name, redact.URL(raw)), err)
	}
	if base.Scheme == "https" && ws.Scheme != "wss" {
		return "", fail(sec, ErrUntrustedURL, fmt.Sprintf("%s: webSocketDebuggerUrl %s downgrades https to %s", name, redact.URL(raw), ws.Scheme), nil)
	}
	same := sameHost(ws.Hostname(), base.Hostname())
	if !same && !hostAllowed(ws.Hostname(), allowedHosts) {
		return "", fail(sec, ErrUntrustedURL, fmt.Sprintf("%s: webSocketDebuggerUrl %s names host %q, not the endpoint's", name, redact.URL(raw), ws.Hostname()), nil)
	}
	if !same || base.RawQuery == "" {
		return raw, nil
	}
	have := ws.Query()
	var add []string
	for kv := range strings.SplitSeq(base.RawQuery, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if kv != "" && !have.Has(k) {
			add = append(add, kv)
		}
	}
	if len(add) == 0 {
		return raw, nil
	}
	if ws.RawQuery != "" {
		ws.RawQuery += "&"
	}
	ws.RawQuery += strings.Join(add, "&")
	ws.Fragment, ws.RawFragment = "", ""
	return ws.String(), nil
}

// sameHost compares two host names as DNS does: without case, without a
// trailing dot.
func sameHost(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}

// hostAllowed reports whether host is one of allowed: an exact name, or
// "*.example.com" for any name under example.com (not example.com itself).
func hostAllowed(host string, allowed []string) bool {
	h := strings.TrimSuffix(host, ".")
	for _, a := range allowed {
		a = strings.TrimSuffix(a, ".")
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			if len(h) > len(suffix)+1 && sameHost(h[len(h)-len(suffix):], suffix) && h[len(h)-len(suffix)-1] == '.' {
				return true
			}
			continue
		}
		if a != "" && sameHost(h, a) {
			return true
		}
	}
	return false
}
