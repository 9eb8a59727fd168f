package hybroutegenkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/adapters/genkit"
	"github.com/hybroute/hybroute/agent"
)

// newToolset is a toolset on a router with no cloud provider, closed at
// the test's end.
func newToolset(t *testing.T) *agent.Toolset {
	t.Helper()
	router, err := hybroute.New(nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = router.Close() })
	ts := agent.New(router)
	t.Cleanup(func() { require.NoError(t, ts.Close()) })
	return ts
}

// servePage serves html on loopback.
func servePage(t *testing.T, html string) string {
	t.Helper()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, html) }))
	t.Cleanup(page.Close)
	return page.URL
}

// snapshot is the text of browser_snapshot in the session key, read
// through the toolset itself.
func snapshot(t *testing.T, ts *agent.Toolset, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := ts.Call(ctx, key, "browser_snapshot", json.RawMessage(`{}`))
	require.NoError(t, err)
	return res.Text
}

func TestToolsCarryTheToolsetsSchemas(t *testing.T) {
	ts := newToolset(t)
	tools, err := hybroutegenkit.Tools(ts, hybroutegenkit.Options{})
	require.NoError(t, err)
	want := ts.Tools()
	require.Len(t, tools, len(want))
	for i, tool := range tools {
		def := tool.Definition()
		assert.Equal(t, want[i].Name, def.Name)
		assert.Equal(t, want[i].Description, def.Description)
		got, err := json.Marshal(def.InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, string(want[i].InputSchema), string(got), want[i].Name)
	}
}

// TestGenerateRedeemsTheCode: genkit.Generate's tool loop runs the tools
// for the scripted model in the session the context names, and the page
// shows the code redeemed.
func TestGenerateRedeemsTheCode(t *testing.T) {
	url := servePage(t, couponPage)
	ts := newToolset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := genkit.Init(ctx)
	tools, err := hybroutegenkit.Define(g, ts, hybroutegenkit.Options{})
	require.NoError(t, err)
	assert.NotNil(t, genkit.LookupTool(g, "browser_click"), "Define registers the tools")
	model := genkit.DefineModel(g, "scripted/browser", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		scriptedModel(url))
	refs := make([]ai.ToolRef, len(tools))
	for i, tool := range tools {
		refs[i] = tool
	}

	resp, err := genkit.Generate(hybroutegenkit.WithSessionKey(ctx, "shopper-1"), g,
		ai.WithModel(model), ai.WithPrompt("Redeem the code the page shows."), ai.WithTools(refs...), ai.WithMaxTurns(10))
	require.NoError(t, err)
	assert.Equal(t, "code K7Q2: Redeemed: 10% off", resp.Text())
	assert.Contains(t, snapshot(t, ts, "shopper-1"), "paragraph: Redeemed: 10% off", "the click happened in the page")
	assert.Contains(t, snapshot(t, ts, "default"), "Page: about:blank", "the calls ran in the context's session, not the default one")
}

// TestToolsRunInTheOptionsSession: with no key in the context the tools
// run in Options.SessionKey's session; a screenshot comes back as a media
// part; a refused URL is a tool output the model reads, not an error.
func TestToolsRunInTheOptionsSession(t *testing.T) {
	url := servePage(t, couponPage)
	ts := newToolset(t)
	tools, err := hybroutegenkit.Tools(ts, hybroutegenkit.Options{SessionKey: "opt"})
	require.NoError(t, err)
	byName := map[string]ai.Tool{}
	for _, tool := range tools {
		byName[tool.Name()] = tool
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out, err := byName["browser_navigate"].RunRawMultipart(ctx, map[string]any{"url": url})
	require.NoError(t, err)
	assert.Contains(t, out.Output, `Page: "Coupon"`)
	assert.Contains(t, snapshot(t, ts, "opt"), "Your code: K7Q2")

	shot, err := byName["browser_screenshot"].RunRawMultipart(ctx, map[string]any{})
	require.NoError(t, err)
	require.Len(t, shot.Content, 1)
	assert.Equal(t, "image/png", shot.Content[0].ContentType)
	assert.True(t, strings.HasPrefix(shot.Content[0].Text, "data:image/png;base64,iVBOR"), "a PNG as a data URL")

	refused, err := byName["browser_navigate"].RunRawMultipart(ctx, map[string]any{"url": "http://169.254.169.254/latest/meta-data/"})
	require.NoError(t, err)
	assert.Contains(t, refused.Output, "targets a cloud metadata endpoint")
}
