package mcpserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/agenttest"
	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// loginSite is a loopback app behind a login: /account shows who is
// logged in, or sends the browser to /login, whose form sets the cookie.
func loginSite(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>login</title><body style="margin:0">
<form method=post action=/login>
<input name=user id=user style="position:absolute;left:0;top:0;width:300px;height:40px">
<input name=password id=password type=password style="position:absolute;left:0;top:100px;width:300px;height:40px">
<button style="position:absolute;left:0;top:200px">Log in</button>
</form>`) // with two fields, Enter submits only a form with a submit button
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("password") != "s3cret" {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "who", Value: r.FormValue("user"), Path: "/"})
		http.Redirect(w, r, "/account", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /account", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("who")
		if err != nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		fmt.Fprintf(w, `<!doctype html><title>account</title><h1>Logged in as %s</h1>`, c.Value)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// personLogsIn is the person: a browser of their own opens the live view,
// types the user name and password into the picture of the login page,
// submits it, waits until the view shows the account page, and presses
// Done.
func personLogsIn(t *testing.T, ctx context.Context, viewURL string) error {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testenv.ChromiumPath()), chromedp.WindowSize(1000, 800))
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelA()
	tab, cancelT := chromedp.NewContext(actx)
	defer cancelT()
	poll := func(expr string) error {
		_, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
		return err
	}
	// click clicks the picture where the page's point (x, y) is.
	click := func(x, y float64) error {
		at, err := chromedp.Run(tab, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
			const r = screen.getBoundingClientRect();
			return [r.left + %v * r.width / meta.w, r.top + %v * r.height / meta.h];
		})()`, x, y)))
		if err != nil {
			return err
		}
		return chromedp.Do(tab, chromedp.MouseClickXY(at[0], at[1]))
	}
	steps := []func() error{
		func() error { return chromedp.Do(tab, chromedp.Navigate(viewURL)) },
		func() error {
			return poll(`screen.dataset.frames >= 1 && meta.w > 0 && titleEl.textContent === "login"`)
		},
		func() error { return click(150, 20) },
		func() error { return chromedp.Do(tab, chromedp.KeyEvent("ada")) },
		func() error { return click(150, 120) },
		func() error { return chromedp.Do(tab, chromedp.KeyEvent("s3cret\r")) },
		func() error { return poll(`titleEl.textContent === "account"`) },
		func() error {
			_, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.getElementById("done").click(), true`))
			return err
		},
		func() error { return poll(`document.body.dataset.ended === "done"`) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			state, _ := chromedp.Run(tab, chromedp.Evaluate[string](`titleEl.textContent + " | " + addr.value + " | " + msg.textContent`))
			return fmt.Errorf("the person's step %d: %w (the view: %s)", i, err, state)
		}
	}
	return nil
}

// TestMCPHandoff: an agent over MCP asks a person to log in; the client
// takes URL-mode elicitation, so the server asks it to open the live view,
// where a scripted person logs in on a loopback app and presses Done; the
// agent then goes on logged in.
func TestMCPHandoff(t *testing.T) {
	site := loginSite(t)
	r := agenttest.NewRouter(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	views := r.LiveViews(hybroute.LiveViewOptions{BaseURL: "http://" + ln.Addr().String() + mcpserver.LiveViewPath})
	t.Cleanup(views.Close)
	ts := agent.New(r, agent.WithHandoff(views))
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	srv := mcpserver.New(ts, mcpserver.Options{LiveViews: views})
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)

	ctx := testenv.Context(t, 2*time.Minute)
	person := make(chan error, 1)
	var asked *mcp.ElicitParams
	client := mcp.NewClient(&mcp.Implementation{Name: "handoff-client", Version: "v0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			// The user agrees to open the URL; the person acts on their own time.
			asked = req.Params
			go func() { person <- personLogsIn(t, ctx, req.Params.URL) }()
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	c := &mcptest.Client{T: t, CS: cs}

	_, text := c.OK("browser_navigate", map[string]any{"url": site.URL + "/account"})
	require.Contains(t, text, "login", "the app asks for a login first")

	type answer struct {
		res  *mcp.CallToolResult
		text string
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_handoff", Arguments: map[string]any{"task": "Log in as ada", "timeout_seconds": 90}})
		if !assert.NoError(t, err) {
			res = &mcp.CallToolResult{IsError: true}
		}
		answered <- answer{res, mcptest.TextOf(res)}
	}()
	var a answer
	select {
	case err := <-person:
		require.NoError(t, err)
		a = <-answered
	case a = <-answered:
		require.NoError(t, <-person) // the answer may come before the view tells the person
	}
	res, text := a.res, a.text
	require.False(t, res.IsError, text)
	require.NotNil(t, asked, "the server asked the client to open the view")
	assert.Equal(t, "url", asked.Mode)
	assert.True(t, strings.HasPrefix(asked.URL, "http://"+ln.Addr().String()+mcpserver.LiveViewPath), asked.URL)
	assert.Contains(t, asked.Message, "Log in as ada")
	assert.Contains(t, text, "The person finished the step and pressed Done.")
	assert.Contains(t, text, `"account"`)
	assert.NotContains(t, text, "s3cret", "the person's password is nowhere in the agent's result")
	where, _ := res.Meta[mcpserver.MetaWhere].(map[string]any)
	assert.Equal(t, site.URL+"/account", where["url"])

	// The agent goes on logged in.
	_, text = c.OK("browser_snapshot", nil)
	assert.Contains(t, text, "Logged in as ada")

	// The view's link died with the hand-off.
	resp, err := http.Get(asked.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// A client without URL-mode elicitation hears of the view in a progress
	// notification of the call; here the person gives up at once (over the
	// view's own WebSocket), and the agent hears so.
	urls := make(chan string, 1)
	plain, err := mcp.NewClient(&mcp.Implementation{Name: "plain-client", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if m := regexp.MustCompile(`Open (http://\S+) and press Done`).FindStringSubmatch(req.Params.Message); m != nil {
				urls <- m[1]
			}
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	go func() {
		select {
		case u := <-urls:
			ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(u, "http")+"/ws", nil)
			if assert.NoError(t, err) {
				assert.NoError(t, ws.Write(ctx, websocket.MessageText, []byte(`{"t":"giveup"}`)))
				_, _, _ = ws.Read(ctx) // until the view closes it
			}
		case <-ctx.Done():
		}
	}()
	params := &mcp.CallToolParams{Name: "browser_handoff", Arguments: map[string]any{"task": "Solve the check"}}
	params.SetProgressToken("handoff-1")
	res, err = plain.CallTool(ctx, params)
	require.NoError(t, err)
	text = mcptest.TextOf(res)
	assert.False(t, res.IsError, text)
	assert.Contains(t, text, "The person gave up without finishing the step.")
	assert.Contains(t, text, "The live view was \"http://"+ln.Addr().String()+mcpserver.LiveViewPath, "the result names the view too")

	// A user who declines to open the view ends the hand-off at once: the
	// agent is told so, and the view's link is dead.
	var declined *mcp.ElicitParams
	refusing, err := mcp.NewClient(&mcp.Implementation{Name: "declining-client", Version: "v0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			declined = req.Params
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = refusing.Close() })
	res, err = refusing.CallTool(ctx, &mcp.CallToolParams{Name: "browser_handoff", Arguments: map[string]any{"task": "Accept the terms"}})
	require.NoError(t, err)
	text = mcptest.TextOf(res)
	assert.Contains(t, text, "The user declined to open the live view; nobody acted in the page.")
	require.NotNil(t, declined)
	resp, err = http.Get(declined.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
