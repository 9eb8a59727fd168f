package hybroutegenkit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/adapters/genkit"
	"github.com/hybroute/hybroute/agent"
)

// couponPage is a page on loopback with a code to read, a box to type it
// in and a button that redeems it.
const couponPage = `<!doctype html><title>Coupon</title>
<p>Your code: K7Q2</p>
<input id=c aria-label=Code>
<button onclick="out.textContent = c.value === 'K7Q2' ? 'Redeemed: 10% off' : 'Unknown code'">Redeem</button>
<p id=out></p>`

// scriptedModel is a Genkit model that needs no network: it asks for the
// tools in a fixed order, reading the refs and the code from the
// snapshots the tools returned, and answers with the page's last word.
func scriptedModel(pageURL string) ai.ModelFunc {
	return func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		var outputs []string // the tools' outputs so far, in order
		for _, m := range req.Messages {
			for _, p := range m.Content {
				if p.IsToolResponse() {
					outputs = append(outputs, fmt.Sprint(p.ToolResponse.Output))
				}
			}
		}
		find := func(i int, re string) string {
			if m := regexp.MustCompile(re).FindStringSubmatch(outputs[i]); m != nil {
				return m[1]
			}
			return "(not found)"
		}
		use := func(tool string, input map[string]any) (*ai.ModelResponse, error) {
			return &ai.ModelResponse{Message: &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{
				ai.NewToolRequestPart(&ai.ToolRequest{Name: tool, Input: input, Ref: fmt.Sprint(len(outputs))})}}}, nil
		}
		switch len(outputs) {
		case 0:
			return use("browser_navigate", map[string]any{"url": pageURL})
		case 1:
			return use("browser_snapshot", map[string]any{})
		case 2: // outputs[1] is the snapshot
			return use("browser_type", map[string]any{"ref": find(1, `textbox "Code" \[ref=(e\d+)\]`), "text": find(1, `Your code: (\w+)`)})
		case 3:
			return use("browser_click", map[string]any{"ref": find(1, `button "Redeem" \[ref=(e\d+)\]`)})
		case 4:
			return use("browser_snapshot", map[string]any{})
		}
		answer := "code " + find(1, `Your code: (\w+)`) + ": " + find(4, `paragraph: (Redeemed.*|Unknown code)`)
		return &ai.ModelResponse{FinishReason: ai.FinishReasonStop,
			Message: &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{ai.NewTextPart(answer)}}}, nil
	}
}

// genkit.Generate's tool loop runs hybroute's browser tools for a scripted
// model, which redeems the code a page on loopback shows, in the local
// Chromium.
func Example() {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, couponPage) }))
	defer page.Close()

	router, err := hybroute.New(nil) // no cloud provider: every call runs on the local Chromium
	if err != nil {
		fmt.Println(err)
		return
	}
	defer router.Close()
	ts := agent.New(router)
	defer ts.Close()

	ctx := context.Background()
	g := genkit.Init(ctx)
	tools, err := hybroutegenkit.Define(g, ts, hybroutegenkit.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := genkit.DefineModel(g, "scripted/browser", &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true}},
		scriptedModel(page.URL))

	refs := make([]ai.ToolRef, len(tools))
	for i, t := range tools {
		refs[i] = t
	}
	resp, err := genkit.Generate(hybroutegenkit.WithSessionKey(ctx, "shopper-1"), g,
		ai.WithModel(model), ai.WithPrompt("Redeem the code the page shows."),
		ai.WithTools(refs...), ai.WithMaxTurns(10))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text())
	// Output:
	// code K7Q2: Redeemed: 10% off
}
