package hybrouteeino_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/adapters/eino"
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
	tools, err := hybrouteeino.Tools(ts, hybrouteeino.Options{})
	require.NoError(t, err)
	want := ts.Tools()
	require.Len(t, tools, len(want))
	for i, bt := range tools {
		_, ok := bt.(tool.InvokableTool)
		require.True(t, ok, "%s is invokable", want[i].Name)
		info, err := bt.Info(t.Context())
		require.NoError(t, err)
		assert.Equal(t, want[i].Name, info.Name)
		assert.Equal(t, want[i].Description, info.Desc)
		js, err := info.ToJSONSchema()
		require.NoError(t, err)
		got, err := json.Marshal(js)
		require.NoError(t, err)
		assert.JSONEq(t, string(want[i].InputSchema), string(got), want[i].Name)
	}
}

// TestReactAgentTracksTheOrder: a react agent runs the tools for the
// scripted model in the session the context names, and the page shows
// the order tracked.
func TestReactAgentTracksTheOrder(t *testing.T) {
	url := servePage(t, trackPage)
	ts := newToolset(t)
	tools, err := hybrouteeino.Tools(ts, hybrouteeino.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ra, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: &scriptedModel{pageURL: url},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: tools},
		MaxStep:          20,
	})
	require.NoError(t, err)

	answer, err := ra.Generate(hybrouteeino.WithSessionKey(ctx, "customer-7"),
		[]*schema.Message{schema.UserMessage("Track the order the page shows.")})
	require.NoError(t, err)
	assert.Equal(t, "Order 5521: shipped", answer.Content)
	assert.Contains(t, snapshot(t, ts, "customer-7"), "paragraph: Order 5521: shipped", "the click happened in the page")
	assert.Contains(t, snapshot(t, ts, "default"), "Page: about:blank", "the calls ran in the context's session, not the default one")
}

// TestToolsRunInTheOptionsSession: with no key in the context the tools
// run in Options.SessionKey's session; a refused URL is a result the model
// reads, and arguments that are not JSON are an error.
func TestToolsRunInTheOptionsSession(t *testing.T) {
	url := servePage(t, trackPage)
	ts := newToolset(t)
	tools, err := hybrouteeino.Tools(ts, hybrouteeino.Options{SessionKey: "opt"})
	require.NoError(t, err)
	navigate := tools[0].(tool.InvokableTool)
	info, err := navigate.Info(t.Context())
	require.NoError(t, err)
	require.Equal(t, "browser_navigate", info.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	out, err := navigate.InvokableRun(ctx, `{"url": "`+url+`"}`)
	require.NoError(t, err)
	assert.Contains(t, out, `Page: "Parcels"`)
	assert.Contains(t, snapshot(t, ts, "opt"), "Order number: 5521")

	out, err = navigate.InvokableRun(ctx, `{"url": "http://169.254.169.254/latest/meta-data/"}`)
	require.NoError(t, err)
	assert.Contains(t, out, "targets a cloud metadata endpoint")

	_, err = navigate.InvokableRun(ctx, `{"url": `)
	assert.ErrorContains(t, err, "not JSON")
}

// TestMultimodalToolsReturnTheScreenshot: the multimodal tools run in the
// session too, and a screenshot comes back as a PNG image part after the
// text.
func TestMultimodalToolsReturnTheScreenshot(t *testing.T) {
	url := servePage(t, trackPage)
	ts := newToolset(t)
	tools, err := hybrouteeino.MultimodalTools(ts, hybrouteeino.Options{})
	require.NoError(t, err)
	byName := map[string]tool.EnhancedInvokableTool{}
	for _, bt := range tools {
		et, ok := bt.(tool.EnhancedInvokableTool)
		require.True(t, ok)
		info, err := et.Info(t.Context())
		require.NoError(t, err)
		byName[info.Name] = et
	}
	ctx, cancel := context.WithTimeout(hybrouteeino.WithSessionKey(context.Background(), "shots"), 2*time.Minute)
	defer cancel()

	res, err := byName["browser_navigate"].InvokableRun(ctx, &schema.ToolArgument{Text: `{"url": "` + url + `"}`})
	require.NoError(t, err)
	require.Len(t, res.Parts, 1)
	assert.Contains(t, res.Parts[0].Text, `Page: "Parcels"`)
	res, err = byName["browser_screenshot"].InvokableRun(ctx, &schema.ToolArgument{})
	require.NoError(t, err)
	require.Len(t, res.Parts, 2)
	assert.Equal(t, schema.ToolPartTypeText, res.Parts[0].Type)
	require.NotNil(t, res.Parts[1].Image)
	assert.Equal(t, "image/png", res.Parts[1].Image.MIMEType)
	png, err := base64.StdEncoding.DecodeString(*res.Parts[1].Image.Base64Data)
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))
}
