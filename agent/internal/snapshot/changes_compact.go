package snapshot

import (
	"regexp"
	"strings"
)

// Compact is a LineDiff as the model reads it after an action: the lines
// without the indentation they share and without the tree's "- " bullet,
// and an element whose line changed in place (the same ref, or the same
// role and name where there is no ref) as one line of its new state,
// marked "~", in place of a line that went and one that came.
func Compact(diff string) string {
	if diff == "" {
		return ""
	}
	lines := strings.Split(diff, "\n")
	type entry struct {
		sign byte
		body string // the tree's line without the sign
		key  string
		drop bool
	}
	es := make([]entry, len(lines))
	indent := -1
	for i, l := range lines {
		sign, body := byte(' '), l
		if len(l) >= 2 && (l[0] == '+' || l[0] == '-') && l[1] == ' ' {
			sign, body = l[0], l[2:]
		}
		es[i] = entry{sign: sign, body: body, key: lineKey(body)}
		if n := len(body) - len(strings.TrimLeft(body, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	// Pair the lines that went with the lines that came, by key, where
	// as many went as came: in order.
	went, came := map[string][]int{}, map[string][]int{}
	for i, e := range es {
		switch e.sign {
		case '-':
			went[e.key] = append(went[e.key], i)
		case '+':
			came[e.key] = append(came[e.key], i)
		}
	}
	for k, ws := range went {
		cs := came[k]
		if len(cs) != len(ws) {
			continue
		}
		for j := range ws {
			es[ws[j]].drop = true
			es[cs[j]].sign = '~'
		}
	}
	var b strings.Builder
	for _, e := range es {
		if e.drop {
			continue
		}
		body := e.body[min(indent, len(e.body)):]
		// The bullet after the indentation says nothing in a diff.
		lead := len(body) - len(strings.TrimLeft(body, " "))
		body = body[:lead] + strings.TrimPrefix(body[lead:], "- ")
		b.WriteByte(e.sign)
		b.WriteByte(' ')
		b.WriteString(body)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

var refAttr = regexp.MustCompile(`\[ref=(e\d+)\]`)

// lineKey is what names a line's element across a change: its ref, or
// its indentation, role and name (the line up to its value).
func lineKey(body string) string {
	if m := refAttr.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	if i := strings.Index(body, ": "); i >= 0 {
		return body[:i]
	}
	return strings.TrimSuffix(body, ":")
}
