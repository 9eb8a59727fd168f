package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/mcpserver"
)

// orderPage is a shop page on loopback: a price, a quantity to type, and a
// button that shows the total.
const orderPage = `<!doctype html><title>Order</title>
<p>Price: 42 EUR</p>
<input id=q aria-label=Quantity>
<button onclick="total.textContent = 'Total: ' + 42 * Number(q.value) + ' EUR'">Order</button>
<p id=total></p>`

// An MCP client in the same process, on the SDK's in-memory transports: a
// scripted model (a fixed sequence of tool calls, each reading what the
// last one returned) orders three items on a page served on loopback, in
// the local Chromium.
func Example() {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, orderPage) }))
	defer page.Close()

	router, err := hybroute.New(nil) // no cloud provider: every call runs on the local Chromium
	if err != nil {
		fmt.Println(err)
		return
	}
	defer router.Close()
	ts := agent.New(router)
	defer ts.Close()
	srv := mcpserver.New(ts, mcpserver.Options{})
	defer srv.Close()

	ctx := context.Background()
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, serverEnd); err != nil {
		fmt.Println(err)
		return
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "scripted-model", Version: "v0"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()

	// call runs one tool and returns the text the model would read.
	call := func(name string, args map[string]any) string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return err.Error()
		}
		var b strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return b.String()
	}
	// find is the first submatch of re in text, as the model reads it.
	find := func(text, re string) string {
		if m := regexp.MustCompile(re).FindStringSubmatch(text); m != nil {
			return m[1]
		}
		return "(not found)"
	}

	call("browser_navigate", map[string]any{"url": page.URL})
	snap := call("browser_snapshot", map[string]any{})
	fmt.Println("price:", find(snap, `paragraph: Price: (\d+ EUR)`))
	call("browser_type", map[string]any{"ref": find(snap, `textbox "Quantity" \[ref=(e\d+)\]`), "text": "3"})
	call("browser_click", map[string]any{"ref": find(snap, `button "Order" \[ref=(e\d+)\]`)})
	snap = call("browser_snapshot", map[string]any{})
	fmt.Println(find(snap, `paragraph: (Total: .*)`))
	// Output:
	// price: 42 EUR
	// Total: 126 EUR
}
