package whatwg

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// TestSweep compares Parse with a large Chromium recording that is too big to
// keep in the repository, e.g. one input per code point:
//
//	go run ./internal/tools/recordhosts -in /tmp/sweep.txt -out /tmp/sweep.json
//	WHATWG_SWEEP=/tmp/sweep.json go test -run TestSweep ./internal/whatwg
//
// A different host, or a host where Chromium refuses the URL, fails the
// test; a refusal where Chromium accepts (fail closed) is only counted.
func TestSweep(t *testing.T) {
	path := os.Getenv("WHATWG_SWEEP")
	if path == "" {
		t.Skip("WHATWG_SWEEP not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tab chromiumTable
	if err := json.Unmarshal(data, &tab); err != nil {
		t.Fatal(err)
	}
	closed := 0
	for _, c := range tab.Cases {
		u, err := Parse(c.Input)
		switch {
		case err != nil && c.OK:
			closed++
			if testing.Verbose() {
				t.Logf("fail closed: %s (Chromium: %q)", strconv.QuoteToASCII(c.Input), c.Hostname)
			}
		case err == nil && !c.OK:
			t.Errorf("accepted %s as %q, Chromium refuses it", strconv.QuoteToASCII(c.Input), u.Host)
		case err == nil && u.Host != c.Hostname:
			t.Errorf("host of %s: got %q, Chromium %q", strconv.QuoteToASCII(c.Input), u.Host, c.Hostname)
		}
	}
	t.Logf("%d inputs, %d refused here but accepted by Chromium", len(tab.Cases), closed)
}
