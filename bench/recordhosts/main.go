// Command recordhosts records how Chromium parses a list of URLs, so that the
// package internal/whatwg can be tested against the browser it stands in for.
//
// Usage (from the module root):
//
//	go run ./bench/recordhosts [-in testdata/url-hosts.inputs.txt] [-out testdata/url-hosts.chromium.json]
//
// The browser is /usr/bin/chromium unless $CHROMIUM names another one. As
// root, the browser runs with --no-sandbox.
//
// # Input format
//
// Every line of the input file is one Go double-quoted string literal (the
// syntax of strconv.Quote, read back with strconv.Unquote), so an input can
// hold tabs (\t), newlines (\n), other C0 controls (\x01), leading or trailing
// spaces and any Unicode (\u3002 or the literal character). Empty lines and
// lines whose first non-space character is '#' are comments. An input must be
// valid UTF-8, because a JavaScript string cannot carry other bytes. A
// duplicate input is an error, so that each row of the table is one case.
//
// # Output format
//
// A pretty-printed JSON object: "chromium" is the browser's version as
// Browser.getVersion reports it, "userAgent" is navigator.userAgent, and
// "cases" is one object per input, in input order, with the fields of
// `new URL(input)`: ok (false when the constructor threw), protocol, hostname
// and port.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// Case is one recorded row.
type Case struct {
	Input    string `json:"input"`
	OK       bool   `json:"ok"`
	Protocol string `json:"protocol,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	Port     string `json:"port,omitempty"`
}

// Table is the file that the recorder writes.
type Table struct {
	Comment   string `json:"comment"`
	Chromium  string `json:"chromium"`
	UserAgent string `json:"userAgent"`
	Cases     []Case `json:"cases"`
}

// ReadInputs parses the input file format described in the package comment.
func ReadInputs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := strconv.Unquote(line)
		if err != nil || !strings.HasPrefix(line, `"`) {
			return nil, fmt.Errorf("%s:%d: not a Go double-quoted string: %s", path, n, line)
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%s:%d: input is not valid UTF-8", path, n)
		}
		if prev, dup := seen[s]; dup {
			return nil, fmt.Errorf("%s:%d: duplicate of line %d: %s", path, n, prev, line)
		}
		seen[s] = n
		out = append(out, s)
	}
	return out, sc.Err()
}

const script = `(function(inputs) {
  return inputs.map(function(s) {
    try {
      const u = new URL(s);
      return {input: s, ok: true, protocol: u.protocol, hostname: u.hostname, port: u.port};
    } catch (e) {
      return {input: s, ok: false};
    }
  });
})(%s)`

func main() {
	in := flag.String("in", "testdata/url-hosts.inputs.txt", "input file, one Go-quoted string per line")
	out := flag.String("out", "testdata/url-hosts.chromium.json", "output JSON file")
	flag.Parse()
	log.SetFlags(0)

	inputs, err := ReadInputs(*in)
	if err != nil {
		log.Fatal(err)
	}

	execPath := os.Getenv("CHROMIUM")
	if execPath == "" {
		execPath = "/usr/bin/chromium"
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(execPath),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		log.Fatalf("navigate: %v", err)
	}
	ver, err := chromedp.CallBrowser(bctx, browser.GetVersion, struct{}{})
	if err != nil {
		log.Fatalf("Browser.getVersion: %v", err)
	}
	ua, err := chromedp.Run(bctx, chromedp.Evaluate[string]("navigator.userAgent"))
	if err != nil {
		log.Fatalf("navigator.userAgent: %v", err)
	}
	arg, err := json.Marshal(inputs)
	if err != nil {
		log.Fatal(err)
	}
	cases, err := chromedp.Run(bctx, chromedp.Evaluate[[]Case](fmt.Sprintf(script, arg)))
	if err != nil {
		log.Fatalf("evaluate: %v", err)
	}
	if len(cases) != len(inputs) {
		log.Fatalf("got %d results for %d inputs", len(cases), len(inputs))
	}
	for i := range cases {
		if cases[i].Input != inputs[i] {
			log.Fatalf("row %d: input came back as %q, sent %q", i, cases[i].Input, inputs[i])
		}
	}
	t := Table{
		Comment:   "Generated by go run ./bench/recordhosts from testdata/url-hosts.inputs.txt; do not edit by hand.",
		Chromium:  ver.Product,
		UserAgent: ua,
		Cases:     cases,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(t); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d cases recorded with %s", *out, len(cases), ver.Product)
}
