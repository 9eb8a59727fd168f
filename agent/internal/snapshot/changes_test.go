package snapshot

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLineDiff(t *testing.T) {
	a := "- heading \"Shop\"\n- paragraph: Cart: 0 items\n- button \"Add\" [ref=e1]\n- link \"Home\" [ref=e2]"
	b := "- heading \"Shop\"\n- paragraph: Cart: 1 item\n- button \"Add\" [ref=e1]\n- text: Thanks\n- link \"Home\" [ref=e2]"
	assert.Equal(t, "+ - paragraph: Cart: 1 item\n- - paragraph: Cart: 0 items\n+ - text: Thanks", LineDiff(a, b))
	assert.Empty(t, LineDiff(a, a))
	assert.Equal(t, "- - link \"Home\" [ref=e2]", LineDiff(a, strings.TrimSuffix(a, "\n- link \"Home\" [ref=e2]")))

	// Past the table's bound the changed middle is listed whole.
	var x, y strings.Builder
	for i := range 3000 {
		x.WriteString("- a" + string(rune('0'+i%10)) + "\n")
		y.WriteString("- b" + string(rune('0'+i%10)) + "\n")
	}
	d := LineDiff("top\n"+x.String()+"end", "top\n"+y.String()+"end")
	assert.Equal(t, 6000, strings.Count(d, "\n")+1)
	assert.NotContains(t, d, "top")
}

func TestCompact(t *testing.T) {
	a := "- heading \"Shop\"\n- paragraph: Cart: 0 items\n- form:\n  - searchbox \"Q\" [ref=e3]\n  - button \"Add\" [ref=e1]"
	b := "- heading \"Shop\"\n- paragraph: Cart: 1 item\n- form:\n  - searchbox \"Q\" [ref=e3]: shoes\n  - button \"Add\" [ref=e1] [disabled]\n  - dialog \"Sure?\":\n    - button \"OK\" [ref=e9]"
	assert.Equal(t, "~ paragraph: Cart: 1 item\n~   searchbox \"Q\" [ref=e3]: shoes\n~   button \"Add\" [ref=e1] [disabled]\n+   dialog \"Sure?\":\n+     button \"OK\" [ref=e9]", Compact(LineDiff(a, b)))
	assert.Equal(t, "- dialog \"Sure?\":\n-   button \"OK\" [ref=e9]", Compact(LineDiff(b, strings.TrimSuffix(b, "\n  - dialog \"Sure?\":\n    - button \"OK\" [ref=e9]"))),
		"the indentation the lines share is left out")
	assert.Empty(t, Compact(""))
	// Two paragraphs went and one came: no pairing guesses which.
	assert.Equal(t, "- p: a\n- p: b\n+ p: c", Compact("- - p: a\n- - p: b\n+ - p: c"))
}
