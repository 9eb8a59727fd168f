package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/hybroute/hybroute/provider"
)

// A Browserbase client makes a session whose CDPURL is the websocket a
// Router dials; the session's HTTPClient is the one the client was given,
// so one transport governs the API calls and the CDP dial. Here the API is
// a stand-in on loopback answering as Browserbase's does; in production
// the client talks to provider.DefaultBrowserbaseBaseURL, and the client
// is given to hybroute.New.
func ExampleNewBrowserbase() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions":
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			fmt.Println("create for project", body["projectId"], "with the key", r.Header.Get("X-BB-API-Key") != "")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"id":"sess-1","connectUrl":"wss://connect.example.com?signingKey=sig-1"}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sessions/sess-1":
			fmt.Println("release sess-1")
			_, _ = w.Write([]byte(`{}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer api.Close()

	hc := api.Client()
	bb := provider.NewBrowserbase("bb_live_key", "proj-1", provider.WithBaseURL(api.URL), provider.WithHTTPClient(hc))
	ctx := context.Background()
	s, err := bb.CreateSession(ctx, "user-42")
	if err != nil {
		fmt.Println(err)
		return
	}
	u, _ := url.Parse(s.CDPURL)
	fmt.Println(bb.Name(), s.Key, s.ID, u.Scheme, u.Host)
	fmt.Println("the session dials with the client's HTTP client:", s.HTTPClient == hc)
	if err := bb.ReleaseSession(ctx, s); err != nil {
		fmt.Println(err)
	}
	// Output:
	// create for project proj-1 with the key true
	// Browserbase user-42 sess-1 wss connect.example.com
	// the session dials with the client's HTTP client: true
	// release sess-1
}

// grid is a Provider of one's own: a browser grid whose API hands out a
// CDP websocket per session. Its sessions carry the HTTP client the grid
// needs for the CDP dial (its own trusted roots, a proxy), which the
// Router uses for that session's websocket.
type grid struct {
	api    string
	client *http.Client
}

func (g *grid) Name() string { return "grid" }

func (g *grid) CreateSession(ctx context.Context, key string) (*provider.Session, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.api+"/sessions?name="+url.QueryEscape(key), nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	defer resp.Body.Close()
	var out struct{ ID, WS string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	return &provider.Session{Key: key, ID: out.ID, CDPURL: out.WS, HTTPClient: g.client}, nil
}

func (g *grid) ReleaseSession(ctx context.Context, s *provider.Session) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, g.api+"/sessions/"+url.PathEscape(s.ID), nil)
	if err != nil {
		return err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("grid: %w", err)
	}
	return resp.Body.Close()
}

// A Provider of one's own needs three methods; hybroute.New takes it like
// any client of this package.
func ExampleProvider() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			_, _ = fmt.Fprintf(w, `{"ID":"g-1","WS":"ws://127.0.0.1:9222/devtools/browser/%s"}`, r.URL.Query().Get("name"))
		case http.MethodDelete:
			fmt.Println("delete", r.URL.Path)
		}
	}))
	defer api.Close()

	var p provider.Provider = &grid{api: api.URL, client: api.Client()}
	ctx := context.Background()
	s, err := p.CreateSession(ctx, "alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name(), s.ID, s.CDPURL)
	if err := p.ReleaseSession(ctx, s); err != nil {
		fmt.Println(err)
	}
	// Output:
	// grid g-1 ws://127.0.0.1:9222/devtools/browser/alice
	// delete /sessions/g-1
}

// A failed call is an *Error: errors.Is tells the kind of failure by what
// the provider said, and the fields carry its words, never its key. Here
// Browser.cash's documented 403 for its plan's concurrent-browser limit
// (BrowserCash/docs docs/sessions/errors.mdx) is a limit to wait out, not
// a refused key.
func ExampleError() {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"error":"Session or account limit reached: the plan's concurrent-browser limit"}`))
	}))
	defer api.Close()

	spec, _ := provider.SessionAPIPreset("browser-cash")
	p, _ := provider.NewSessionAPI(spec, "bc_key", provider.WithBaseURL(api.URL))
	_, err := p.CreateSession(context.Background(), "k")
	fmt.Println(errors.Is(err, provider.ErrRateLimited), errors.Is(err, provider.ErrAuth))
	var pe *provider.Error
	if errors.As(err, &pe) {
		fmt.Println(pe.Status, pe.Refusal() == provider.ErrRateLimited)
	}
	fmt.Println(err)
	// Output:
	// true false
	// 403 true
	// cloud browser provider Browser.cash: create session failed: HTTP 403 Session or account limit reached: the plan's concurrent-browser limit
}
