// Package docs_test checks the documents of the repository: that the index of
// decision records lists every record, and that relative links resolve. It
// reads files only: no browser, no network.
package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// root is the repository root: go test runs in this directory.
const root = ".."

var decisionsDir = filepath.Join(root, "docs", "decisions")

var (
	// decisionName is a record's file name: its date and a short slug.
	decisionName = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})-[a-z0-9]+(?:-[a-z0-9]+)*\.md$`)
	// decisionHead is how a record opens: a title line, a blank line, and
	// "Status: <status>, <date>."
	decisionHead = regexp.MustCompile(`\A# ([^\n]+)\n\nStatus: ([^\n]+), (\d{4}-\d{2}-\d{2})\.\n`)
	// indexRow is one row of the index table.
	indexRow = regexp.MustCompile(`^\| (\d{4}-\d{2}-\d{2}) \| \[([^\]]+)\]\(([^)\s]+)\) \| ([^|]+) \|$`)
)

// record is what the index says about one decision file.
type record struct {
	file, date, title, status string
}

// row is the index row the record must have.
func (r record) row() string {
	return fmt.Sprintf("| %s | [%s](%s) | %s |", r.date, r.title, r.file, r.status)
}

// indexStatus is the status as the index shows it: without the date, which
// the index has in its own column, and with a capital letter.
func indexStatus(s string) string {
	c, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(c)) + s[n:]
}

// records reads every decision file of dir (all but README.md).
func records(t *testing.T, dir string) []record {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []record
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || name == "README.md" {
			continue
		}
		n := decisionName.FindStringSubmatch(name)
		if n == nil {
			t.Errorf("%s: a decision file is named YYYY-MM-DD-short-slug.md (lower case, digits, dashes)", name)
			continue
		}
		h := decisionHead.FindStringSubmatch(read(t, filepath.Join(dir, name)))
		if h == nil {
			t.Errorf("%s: a decision opens with \"# Title\", a blank line and \"Status: <status>, YYYY-MM-DD.\"", name)
			continue
		}
		out = append(out, record{file: name, date: n[1], title: h[1], status: indexStatus(h[2])})
	}
	return out
}

// indexRows returns the rows of the table in the index, in order, and fails
// on a table line that is not a well-formed row.
func indexRows(t *testing.T, index string) []record {
	t.Helper()
	var rows []record
	for i, line := range strings.Split(index, "\n") {
		if !strings.HasPrefix(line, "| 20") {
			continue // the prose, the header and the separator
		}
		m := indexRow.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/decisions/README.md:%d: a row is \"| YYYY-MM-DD | [Title](file.md) | Status |\", not %q", i+1, line)
			continue
		}
		rows = append(rows, record{date: m[1], title: m[2], file: m[3], status: m[4]})
	}
	return rows
}

// TestDecisionIndexIsComplete: every decision file has its exact row in the
// index, every row names a file that is there, once, and the rows are in date
// order. A failure prints the row to add or the fix to make.
func TestDecisionIndexIsComplete(t *testing.T) {
	recs := records(t, decisionsDir)
	if len(recs) == 0 {
		t.Fatal("docs/decisions holds no decision file")
	}
	rows := indexRows(t, read(t, filepath.Join(decisionsDir, "README.md")))

	byFile := make(map[string]record, len(rows))
	for _, r := range rows {
		if _, dup := byFile[r.file]; dup {
			t.Errorf("the index lists %s twice: remove one row", r.file)
		}
		byFile[r.file] = r
	}
	for _, rec := range recs {
		got, ok := byFile[rec.file]
		switch {
		case !ok:
			t.Errorf("the index has no row for %s. Add, in date order:\n%s", rec.file, rec.row())
		case got.row() != rec.row():
			t.Errorf("the index row for %s does not match the file. Replace\n%s\nwith\n%s", rec.file, got.row(), rec.row())
		}
		delete(byFile, rec.file)
	}
	for _, r := range rows {
		if _, stale := byFile[r.file]; stale {
			t.Errorf("the index lists %s, which is not in docs/decisions: add the file or remove the row\n%s", r.file, r.row())
			delete(byFile, r.file)
		}
	}
	dates := make([]string, len(rows))
	for i, r := range rows {
		dates[i] = r.date
	}
	if !slices.IsSorted(dates) {
		t.Errorf("the index rows are not in date order: %v", dates)
	}
}

var (
	// fencedCode and codeSpan are markdown code, whose text is not a link.
	fencedCode = regexp.MustCompile("(?ms)^```.*?^```")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	// inlineLink is the target of [text](target "title"); refLink the
	// target of a reference definition, [label]: target.
	inlineLink = regexp.MustCompile(`\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)`)
	refLink    = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
)

// relativeLinks returns the link targets of markdown text that name a file
// of this repository: not a web address, a mail address or an anchor in the
// same page. A "#fragment" is cut off.
func relativeLinks(text string) []string {
	text = fencedCode.ReplaceAllString(text, "")
	text = codeSpan.ReplaceAllString(text, "")
	var out []string
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, ":") || strings.HasPrefix(target, "#") {
				continue // a scheme (https:, mailto:) or this page
			}
			target, _, _ = strings.Cut(target, "#")
			target, _, _ = strings.Cut(target, "?")
			out = append(out, target)
		}
	}
	return out
}

func TestRelativeLinksAreFound(t *testing.T) {
	text := strings.Join([]string{
		"See [a](a.md) and [b](./dir/b.md#part).",
		"[web](https://example.com/x.md) [mail](mailto:x@example.com) [here](#top)",
		"`[code](not-a-link.md)`",
		"```",
		"[fenced](not-a-link-either.md)",
		"```",
		"[ref]: ../ref.md",
		"[titled](t.md \"a title\")",
	}, "\n")
	want := []string{"a.md", "./dir/b.md", "t.md", "../ref.md"}
	if got := relativeLinks(text); !slices.Equal(got, want) {
		t.Errorf("relativeLinks found %q, want %q", got, want)
	}
}

// TestMarkdownLinksResolve: every relative link in README.md and in docs/
// names a file or directory that exists.
func TestMarkdownLinksResolve(t *testing.T) {
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, path := range files {
		for _, target := range relativeLinks(read(t, path)) {
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), filepath.FromSlash(target))); err != nil {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: the link to %s does not resolve", rel, target)
			}
		}
	}
	if links == 0 {
		t.Error("found no relative link at all: the index alone has one per decision")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
