package snapshot

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func axv(s string) *accessibility.Value {
	b, _ := json.Marshal(s)
	return &accessibility.Value{Value: b}
}

func prop(name accessibility.PropertyName, v string) *accessibility.Property {
	raw := json.RawMessage(v)
	if !json.Valid(raw) {
		raw, _ = json.Marshal(v)
	}
	return &accessibility.Property{Name: name, Value: &accessibility.Value{Value: []byte(raw)}}
}

// node builds an AX node; kids are child node ids.
func node(id, parent, role, name string, backend int, kids []string, props ...*accessibility.Property) *accessibility.Node {
	n := &accessibility.Node{NodeID: accessibility.NodeID(id), ParentID: accessibility.NodeID(parent), Role: axv(role), Name: axv(name),
		BackendDOMNodeID: cdp.BackendNodeID(backend), Properties: props}
	for _, k := range kids {
		n.ChildIDs = append(n.ChildIDs, accessibility.NodeID(k))
	}
	return n
}

func page1() []*accessibility.Node {
	return []*accessibility.Node{
		node("1", "", "RootWebArea", "Shop", 1, []string{"2"}, prop(accessibility.PropertyNameFocusable, "true")),
		{NodeID: "2", ParentID: "1", Ignored: true, Role: axv("none"), ChildIDs: []accessibility.NodeID{"3", "5", "7", "9"}},
		node("3", "2", "heading", "Shop", 3, []string{"4"}, prop(accessibility.PropertyNameLevel, "1")),
		node("4", "3", "StaticText", "Shop", 4, nil),
		node("5", "2", "button", "Buy", 5, []string{"6"}, prop(accessibility.PropertyNameFocusable, "true")),
		node("6", "5", "StaticText", "Buy", 6, nil),
		node("7", "2", "generic", "", 7, []string{"8"}, prop(accessibility.PropertyNameFocusable, "true")),
		node("8", "7", "StaticText", "clickable div", 8, nil),
		node("9", "2", "paragraph", "", 9, []string{"10", "11"}),
		node("10", "9", "StaticText", "Total:", 10, nil),
		node("11", "9", "StaticText", "  42  €", 11, nil),
	}
}

func TestRenderSnapshot(t *testing.T) {
	text, refs := renderSnapshot(page1(), nil, "tab1", "http://shop.test/", 10000)
	assert.Equal(t, `- heading "Shop" [level=1]
- button "Buy" [ref=e1]
- generic [ref=e2]: clickable div
- paragraph: Total: 42 €`, text)
	assert.Equal(t, cdp.BackendNodeID(5), refs.byRef["e1"].node)
	assert.Equal(t, cdp.BackendNodeID(7), refs.byRef["e2"].node)

	// The same nodes keep their refs; a new node gets the next number.
	nodes := page1()
	nodes[1].ChildIDs = append([]accessibility.NodeID{"12"}, nodes[1].ChildIDs...)
	nodes = append(nodes, node("12", "2", "link", "Home", 12, nil, prop(accessibility.PropertyNameURL, "http://shop.test/home?x=1")))
	text2, refs2 := renderSnapshot(nodes, &refs, "tab1", "http://shop.test/", 10000)
	assert.Contains(t, text2, "- link \"Home\" [ref=e3]:\n  - /url: /home?x=1\n- heading")

	// A link's URL is shown with its credentials redacted.
	nodes = append(nodes[:len(nodes):len(nodes)], node("13", "2", "link", "Reset", 13, nil,
		prop(accessibility.PropertyNameURL, "http://shop.test/reset?token=linkSecret123&u=1#access_token=fragSecret456")))
	nodes[1].ChildIDs = append(nodes[1].ChildIDs, "13")
	text3, _ := renderSnapshot(nodes, &refs2, "tab1", "http://shop.test/", 10000)
	assert.Contains(t, text3, "- /url: /reset?token=REDACTED&u=1#access_token=REDACTED")
	assert.NotContains(t, text3, "Secret")
	assert.Contains(t, text2, `- button "Buy" [ref=e1]`)
	assert.Equal(t, 4, refs2.next)

	// Refs resolve only in their tab.
	_, err := refs2.lookup("e1", "tab2")
	assert.ErrorContains(t, err, "another tab")
	_, err = refs2.lookup("[ref=e9]", "tab1")
	assert.ErrorContains(t, err, `ref "e9" is not in the last snapshot`)
	e, err := refs2.lookup("[ref=e3]", "tab1")
	require.NoError(t, err)
	assert.Equal(t, "link", e.role)
}

func TestTruncate(t *testing.T) {
	var lines []string
	for i := range 100 {
		lines = append(lines, fmt.Sprintf("- listitem: item %02d", i))
	}
	out := Truncate(strings.Join(lines, "\n"), 200)
	assert.True(t, strings.HasPrefix(out, "- listitem: item 00\n"))
	assert.Contains(t, out, "[snapshot cut at 200 bytes: 10 of 100 lines shown.")
	assert.Equal(t, "short", Truncate("short", 200))
}

// BenchmarkRenderSnapshot is the toolset's own part of a snapshot: the text
// of a 300-item list (a link and a button per item) from its AX nodes.
func BenchmarkRenderSnapshot(b *testing.B) {
	nodes := []*accessibility.Node{
		node("1", "", "RootWebArea", "Catalogue", 1, []string{"2"}),
		node("2", "1", "list", "", 2, nil),
	}
	id := 10
	for i := range 300 {
		li, a, at, btn, bt := fmt.Sprint(id), fmt.Sprint(id+1), fmt.Sprint(id+2), fmt.Sprint(id+3), fmt.Sprint(id+4)
		id += 5
		nodes[1].ChildIDs = append(nodes[1].ChildIDs, accessibility.NodeID(li))
		nodes = append(nodes,
			node(li, "2", "listitem", "", id, []string{a, btn}),
			node(a, li, "link", fmt.Sprintf("Item %d", i), id+1, []string{at}, prop(accessibility.PropertyNameFocusable, "true"), prop(accessibility.PropertyNameURL, fmt.Sprintf("http://shop.test/item/%d", i))),
			node(at, a, "StaticText", fmt.Sprintf("Item %d", i), id+2, nil),
			node(btn, li, "button", fmt.Sprintf("Add %d", i), id+3, []string{bt}, prop(accessibility.PropertyNameFocusable, "true")),
			node(bt, btn, "StaticText", fmt.Sprintf("Add %d", i), id+4, nil),
		)
	}
	var refs Refs
	b.ReportAllocs()
	for b.Loop() {
		text, r := renderSnapshot(nodes, &refs, "tab", "http://shop.test/", 40000 /* agent.DefaultSnapshotLimit */)
		refs = r
		if len(text) < 1000 {
			b.Fatal(text)
		}
	}
}

// TestFindReadsTheRedactedText: find matches a link's URL as the snapshot
// shows it, so it cannot confirm a credential the text hides.
func TestFindReadsTheRedactedText(t *testing.T) {
	items := []*item{{role: "link", name: "Reset", ref: "e1", url: "https://shop.test/reset?access_token=S3CR3Tq9"}}
	full := renderItems(items, Options{}, nil)
	require.NotContains(t, full, "S3CR3T")
	for _, guess := range []string{"S3CR3T", "access_token=S", "q9"} {
		text, err := selectItems(items, full, Options{Find: guess}, nil)
		require.NoError(t, err)
		assert.Contains(t, text, "nothing in the page contains", guess)
	}
	text, err := selectItems(items, full, Options{Find: "access_token=REDACTED"}, nil)
	require.NoError(t, err)
	assert.Contains(t, text, `link "Reset"`)
}

func TestLabelBesideItsControlIsNotRepeated(t *testing.T) {
	items := []*item{
		{text: "Search products"}, {role: "searchbox", name: "Search products", ref: "e1"},
		{role: "checkbox", name: "Gift wrap", ref: "e2"}, {text: "Gift wrap"},
		{text: "Total"}, {role: "paragraph", name: "Total"},
	}
	assert.Equal(t, "- searchbox \"Search products\" [ref=e1]\n- checkbox \"Gift wrap\" [ref=e2]\n- text: Total\n- paragraph \"Total\"", renderItems(items, Options{}, nil))
}

func TestFolds(t *testing.T) {
	li := func(i int) *item {
		return &item{role: "listitem", children: []*item{
			{role: "link", name: fmt.Sprintf("Item %d", i), ref: fmt.Sprintf("e%d", 2*i+1)},
			{role: "button", name: fmt.Sprintf("Add %d", i), ref: fmt.Sprintf("e%d", 2*i+2)},
		}}
	}
	list := &item{role: "list"}
	for i := range 10 {
		list.children = append(list.children, li(i))
	}
	short := &item{role: "list", children: []*item{li(20), li(21)}}
	items := []*item{{role: "heading", name: "Catalogue"}, list, short}
	f := findFolds(items)
	text := renderItems(items, Options{}, f)
	assert.Contains(t, text, "  - listitem:\n    - link \"Item 2\" [ref=e5]\n    - button \"Add 2\" [ref=e6]\n  - … 7 more listitem like these: browser_snapshot {\"expand\":\"f1\"}\n- list:")
	assert.NotContains(t, text, "Item 3")
	assert.Contains(t, text, "Item 21", "a short run is not folded")

	rest, err := expandFold(f, f.sigs(), "f1", 0)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rest, "- listitem:\n  - link \"Item 3\" [ref=e7]"), rest)
	assert.True(t, strings.HasSuffix(rest, "- button \"Add 9\" [ref=e20]"), rest)

	// A page at a time: past the limit a line offers the rest.
	page, err := expandFold(f, f.sigs(), "f1:2", 100)
	require.NoError(t, err)
	assert.Equal(t, "- listitem:\n  - link \"Item 5\" [ref=e11]\n  - button \"Add 5\" [ref=e12]\n- … 4 more listitem like these: browser_snapshot {\"expand\":\"f1:3\"}", page)

	// The page changed above the list: the fold is found by what it holds.
	moved := findFolds(append([]*item{{role: "paragraph", name: "News"}}, items...))
	again, err := expandFold(moved, f.sigs(), "f1", 0)
	require.NoError(t, err)
	assert.Equal(t, rest, again)
	list.children = append(list.children, li(10))
	grown, err := expandFold(findFolds(items), f.sigs(), "f1", 0)
	require.NoError(t, err, "a list that grew is the same list")
	assert.Contains(t, grown, `link "Item 10"`)
	list.children[5].children[0].name = "Renamed"
	now, err := expandFold(findFolds(items), f.sigs(), "f1", 0)
	require.NoError(t, err, "the same run, with an item changed: shown as it is now")
	assert.Contains(t, now, `link "Renamed"`)
	list.children[3].children[0].name = "Moved"
	_, err = expandFold(findFolds(items), f.sigs(), "f1", 0)
	require.ErrorContains(t, err, "no longer in the page as they were", "the run is no longer the one the model saw")
	_, err = expandFold(f, f.sigs(), "f2", 0)
	require.ErrorContains(t, err, "no such fold")
}

func TestRepeatedGroupsFold(t *testing.T) {
	// Cards of divs: their children are siblings in the tree.
	items := []*item{{role: "heading", name: "Shop"}}
	for i := range 10 {
		items = append(items, &item{role: "heading", name: fmt.Sprintf("Card %d", i)}, &item{text: fmt.Sprintf("$%d", i)},
			&item{role: "button", name: fmt.Sprintf("Buy %d", i), ref: fmt.Sprintf("e%d", i+1)})
	}
	items = append(items, &item{role: "paragraph", name: "End"})
	f := findFolds(items)
	text := renderItems(items, Options{}, f)
	assert.Contains(t, text, "- button \"Buy 2\" [ref=e3]\n- … 7 more heading+text+button like these: browser_snapshot {\"expand\":\"f1\"}\n- paragraph \"End\"")
	assert.NotContains(t, text, "Card 3")
	rest, err := expandFold(f, f.sigs(), "f1:6", 0)
	require.NoError(t, err)
	assert.Equal(t, "- heading \"Card 9\"\n- text: $9\n- button \"Buy 9\" [ref=e10]", rest)

	// Prose repeats too, but has nothing to act on: it is read whole.
	var prose []*item
	for i := range 20 {
		prose = append(prose, &item{role: "heading", name: fmt.Sprintf("Part %d", i)}, &item{role: "paragraph", name: "Text"})
	}
	assert.Empty(t, findFolds(prose).list)
	// So is a form of many fields, with their labels beside them.
	var form []*item
	for i := range 12 {
		form = append(form, &item{text: fmt.Sprintf("Field %d", i)}, &item{role: "textbox", name: fmt.Sprintf("Field %d", i), ref: fmt.Sprintf("e%d", i+1)})
	}
	assert.Empty(t, findFolds(form).list)
}
