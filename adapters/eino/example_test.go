package hybrouteeino_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/adapters/eino"
	"github.com/hybroute/hybroute/agent"
)

// trackPage is a page on loopback with an order number to read, a box to
// type it in and a button that tracks it.
const trackPage = `<!doctype html><title>Parcels</title>
<p>Order number: 5521</p>
<input id=n aria-label="Order number">
<button onclick="out.textContent = n.value === '5521' ? 'Order 5521: shipped' : 'No such order'">Track</button>
<p id=out></p>`

// scriptedModel is an Eino chat model that needs no network: it calls the
// tools in a fixed order, reading the refs and the order number from the
// snapshots the tools returned, and answers with the page's last word.
type scriptedModel struct {
	pageURL string
	tools   []string // the names of the tools it was given
}

func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	c := *m
	c.tools = nil
	for _, t := range tools {
		c.tools = append(c.tools, t.Name)
	}
	return &c, nil
}

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	var outputs []string // the tools' results so far, in order
	for _, msg := range input {
		if msg.Role == schema.Tool {
			outputs = append(outputs, msg.Content)
		}
	}
	find := func(i int, re string) string {
		if m := regexp.MustCompile(re).FindStringSubmatch(outputs[i]); m != nil {
			return m[1]
		}
		return "(not found)"
	}
	use := func(name string, args map[string]any) (*schema.Message, error) {
		if !slices.Contains(m.tools, name) {
			return nil, fmt.Errorf("the model was not given %s", name)
		}
		js, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		return schema.AssistantMessage("", []schema.ToolCall{{ID: fmt.Sprint("call-", len(outputs)), Type: "function",
			Function: schema.FunctionCall{Name: name, Arguments: string(js)}}}), nil
	}
	switch len(outputs) {
	case 0:
		return use("browser_navigate", map[string]any{"url": m.pageURL})
	case 1:
		return use("browser_snapshot", map[string]any{})
	case 2: // outputs[1] is the snapshot
		return use("browser_type", map[string]any{"ref": find(1, `textbox "Order number" \[ref=(e\d+)\]`), "text": find(1, `Order number: (\d+)`)})
	case 3:
		return use("browser_click", map[string]any{"ref": find(1, `button "Track" \[ref=(e\d+)\]`)})
	case 4:
		return use("browser_snapshot", map[string]any{})
	}
	return schema.AssistantMessage(find(4, `paragraph: (Order \d+: .*|No such order)`), nil), nil
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	msg, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{msg}), nil
}

// An Eino react agent runs hybroute's browser tools for a scripted model,
// which tracks the order a page on loopback shows, in the local Chromium.
func Example() {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, trackPage) }))
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
	tools, err := hybrouteeino.Tools(ts, hybrouteeino.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ra, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: &scriptedModel{pageURL: page.URL},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: tools},
		MaxStep:          20,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, err := ra.Generate(hybrouteeino.WithSessionKey(ctx, "customer-7"),
		[]*schema.Message{schema.UserMessage("Track the order the page shows.")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(answer.Content)
	// Output:
	// Order 5521: shipped
}
