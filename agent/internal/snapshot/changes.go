package snapshot

import (
	"strings"
)

// maxDiffCells bounds the table of the line diff: past it, the changed
// middle of the two texts is reported whole (still correct, not minimal).
const maxDiffCells = 4 << 20

// LineDiff lists the lines of b that are not in a ("+ ") and of a not in b
// ("- "), in order, from a longest common subsequence of the lines.
func LineDiff(a, b string) string {
	if a == b {
		return ""
	}
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	var out strings.Builder
	line := func(sign, s string) {
		out.WriteString(sign)
		out.WriteString(s)
		out.WriteByte('\n')
	}
	n, m := len(x), len(y)
	if n*m > maxDiffCells {
		for _, s := range x {
			line("- ", s)
		}
		for _, s := range y {
			line("+ ", s)
		}
		return strings.TrimRight(out.String(), "\n")
	}
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i*w+j+1] >= lcs[(i+1)*w+j]):
			line("+ ", y[j])
			j++
		default:
			line("- ", x[i])
			i++
		}
	}
	return strings.TrimRight(out.String(), "\n")
}

// focusedAttr is how a line of the tree marks the element that has the
// focus.
const focusedAttr = " [focused]"

// WithoutFocus is text with no element marked as focused, for comparing
// two trees by what the page shows.
func WithoutFocus(text string) string {
	return strings.ReplaceAll(text, focusedAttr, "")
}
