package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePage is a paginated page behind hybroute's tool names, for the
// agent's logic without a browser: a snapshot shows the page's rows and
// its Next button; loud clicks answer with the new rows (an answer that
// carries the change), quiet ones with a word; find shows only the rows
// that match; a stale ref is refused once.
type fakePage struct {
	page      int
	loud      bool
	hideRows  bool // the snapshot leaves the rows out: find shows them
	staleOnce bool
	refBase   int // moves the refs, as a page that re-rendered does
	calls     []string
}

func (p *fakePage) rows() string {
	var b strings.Builder
	for i := range 3 {
		fmt.Fprintf(&b, "- row \"Row %d\"\n", p.page*3+i)
	}
	return b.String()
}

func (p *fakePage) snapshot() string {
	s := fmt.Sprintf("- button \"Next page\" [ref=e%d]\n", p.page+1+p.refBase)
	if !p.hideRows {
		s += p.rows()
	}
	return s
}

func (p *fakePage) serve(t *testing.T) *mcp.ClientSession {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "v0"}, nil)
	tool := func(name string, h func(args map[string]any) (string, bool)) {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			p.calls = append(p.calls, name)
			text, isErr := h(args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}, nil
		})
	}
	tool("browser_navigate", func(map[string]any) (string, bool) { p.page = 0; return "Opened.", false })
	tool("browser_snapshot", func(args map[string]any) (string, bool) {
		if q, ok := args["find"].(string); ok {
			if strings.Contains(p.rows(), q) {
				return p.rows(), false
			}
			return "(nothing)", false
		}
		return p.snapshot(), false
	})
	tool("browser_click", func(args map[string]any) (string, bool) {
		if p.staleOnce {
			p.staleOnce = false
			p.refBase += 10 // the ref the agent holds is stale now
			return "ref not found: take a snapshot", true
		}
		if args["ref"] != fmt.Sprintf("e%d", p.page+1+p.refBase) {
			return "ref not found", true
		}
		p.page++
		if p.loud {
			return p.snapshot(), false
		}
		return "Clicked.", false
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(t.Context(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// pagedTask looks for Row 7, on the third page.
func pagedTask() task {
	return task{name: "paged", answers: []string{"Row 7"}, steps: []step{
		navigate("/"), snapshot(),
		until("Row 7", 5, func(i int) []step {
			return []step{click("button", "Next page"), look(fmt.Sprintf("Row %d", (i+1)*3))}
		}),
	}}
}

func runFake(t *testing.T, p *fakePage) taskResult {
	tasksSites = &sites{base: "http://127.0.0.1:1"}
	cs := p.serve(t)
	return runTask(t.Context(), hybrouteServer("", ""), cs, pagedTask(), 100, 0)
}

func TestAgentSnapshotsOnlyWhereTheAnswerDidNotShowThePage(t *testing.T) {
	loud := &fakePage{loud: true}
	r := runFake(t, loud)
	assert.True(t, r.ok, "%v %v", r.missing, r.err)
	assert.Equal(t, []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_click"}, loud.calls,
		"a click that answers with the new rows needs no snapshot after it")

	quiet := &fakePage{}
	r = runFake(t, quiet)
	assert.True(t, r.ok, "%v %v", r.missing, r.err)
	assert.Equal(t, []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_snapshot", "browser_click", "browser_snapshot"}, quiet.calls,
		"a quiet click costs a snapshot")
	assert.Len(t, r.calls, len(quiet.calls))
	chars := 100
	for _, c := range r.calls {
		chars += c.chars
	}
	assert.Equal(t, chars, r.chars, "the tool list counts once, beside every answer")
}

func TestAgentFindsWhatTheSnapshotLeftOut(t *testing.T) {
	p := &fakePage{hideRows: true}
	r := runFake(t, p)
	assert.True(t, r.ok, "%v %v", r.missing, r.err)
	assert.Equal(t, []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_snapshot", "browser_snapshot", "browser_click", "browser_snapshot", "browser_snapshot"}, p.calls,
		"after a snapshot without the rows, one find")
}

func TestAgentRetriesAStaleRefAfterASnapshot(t *testing.T) {
	p := &fakePage{loud: true, staleOnce: true}
	r := runFake(t, p)
	assert.True(t, r.ok, "%v %v", r.missing, r.err)
	assert.Equal(t, []string{"browser_navigate", "browser_snapshot", "browser_click", "browser_snapshot", "browser_click", "browser_click"}, p.calls,
		"the refused click is tried again once, with the ref of a new snapshot")
}

func TestAgentFailsWhereTheAnswerNeverShows(t *testing.T) {
	tasksSites = &sites{base: "http://127.0.0.1:1"}
	p := &fakePage{loud: true}
	tk := pagedTask()
	tk.answers = []string{"Row 99"}
	r := runTask(t.Context(), hybrouteServer("", ""), p.serve(t), tk, 0, 0)
	assert.False(t, r.ok)
	assert.Equal(t, []string{"Row 99"}, r.missing)
}

// TestRefsInEachServersText: the matcher reads refs out of each server's
// own text, the newest first, past attributes between name and ref.
func TestRefsInEachServersText(t *testing.T) {
	cases := []struct {
		s    server
		old  string
		text string
		want string
	}{
		{hybrouteServer("", ""), `- radio "Express" [ref=e3]`, `- radio "Express" [checked] [ref=e9]`, "e9"},
		{playwrightServer("", ""), `- radio "Express" [ref=e3]`, `- radio "Express" [checked] [ref=f1e9]`, "f1e9"},
		{devtoolsServer("", ""), `uid=1_3 radio "Express"`, `uid=2_9 radio "Express" checked`, "2_9"},
	}
	for _, c := range cases {
		a := &agent{s: c.s, read: []string{c.old, c.text}}
		ref, err := a.ref("radio", "Express")
		require.NoError(t, err, c.s.name)
		assert.Equal(t, c.want, ref, c.s.name)
	}
}

func TestTokensAreCharactersOverFour(t *testing.T) {
	assert.Equal(t, 0, tokens(0))
	assert.Equal(t, 1, tokens(1))
	assert.Equal(t, 1, tokens(4))
	assert.Equal(t, 2, tokens(5))
	assert.Equal(t, 3, charCount("€1é"), "characters, not bytes")
	assert.Equal(t, "1,234,567", thousands(1234567))
	assert.Equal(t, "999", thousands(999))
}

func TestRatioIsOverTheBestAnchorThatSucceeded(t *testing.T) {
	rs := []taskResult{{chars: 400, ok: true}, {chars: 100, ok: false}, {chars: 800, ok: true}}
	assert.Equal(t, "0.50×", ratio(rs), "the anchor that failed is no bar")
	rs[2].ok = false
	assert.Equal(t, "4.00×", ratio(rs), "where none succeeded, the smallest")
}

func TestEveryTaskSpeaksToEveryServer(t *testing.T) {
	ts := suite()
	assert.GreaterOrEqual(t, len(ts), 12)
	for _, s := range []server{hybrouteServer("", ""), playwrightServer("", ""), devtoolsServer("", "")} {
		d, ok := dialects[s.name]
		require.True(t, ok, s.name)
		assert.NotNil(t, d.navigate, s.name)
		assert.NotNil(t, d.snapshot, s.name)
	}
	for _, tk := range ts {
		assert.NotEmpty(t, tk.answers, tk.name)
		assert.NotEmpty(t, tk.steps, tk.name)
	}
}

// TestSitesServeTheTasksPages: every page renders and is served, and the
// server-side parts (the docs search, the login) answer.
func TestSitesServeTheTasksPages(t *testing.T) {
	st, err := serveSites()
	require.NoError(t, err)
	defer st.stop()
	get := func(u string) string {
		res, err := http.Get(u)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, res.StatusCode, u)
		return string(b)
	}
	for path := range st.pages {
		if !strings.Contains(path, "?") {
			get(st.url(path))
		}
	}
	assert.Contains(t, get(st.url("/frames")), st.site+"/frames/ad", "the ad is another site's")
	assert.Contains(t, get(st.url("/frames/inner")), st.other+"/frames/carrier")
	assert.Contains(t, get(st.other+"/frames/carrier"), "TRK-88412")
	assert.Contains(t, get(st.url("/docs/search?q=rate+limit")), `/docs/page/rate-limits">Rate limits</a>`)
	assert.Contains(t, get(st.url("/docs/page/rate-limits")), "600 requests per minute per token")
	assert.Contains(t, get(st.url("/table")), tableRows()[86].Balance)
	assert.Contains(t, get(st.url("/article")), "completed in 1893")
	assert.Contains(t, get(st.url("/gallery")), "Mirela Costa")

	// The login: a wrong password stays on the form, the right one lands
	// on the dashboard.
	jar := &cookieJar{}
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(st.url("/login"), url.Values{"username": {"ada"}, "password": {"nope"}})
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Contains(t, string(b), "Wrong username or password.")
	res, err = c.PostForm(st.url("/login"), url.Values{"username": {"ada"}, "password": {"lovelace"}})
	require.NoError(t, err)
	b, _ = io.ReadAll(res.Body)
	res.Body.Close()
	assert.Contains(t, string(b), "Revenue this month: $48,210")
}

// cookieJar keeps the cookies of one host, enough for the login.
type cookieJar struct{ cs []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cs = append(j.cs, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cs }
