package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/provider"
	"github.com/hybroute/hybroute/route"
)

func TestDescribeErrors(t *testing.T) {
	hybroutetest.Parallel(t)
	meta := &netpolicy.BlockedError{URL: "http://169.254.169.254/", Class: netpolicy.ClassMetadata, Reason: netpolicy.ReasonMetadata}
	priv := &netpolicy.BlockedError{URL: "http://10.0.0.1/", Class: netpolicy.ClassPrivate, Reason: netpolicy.ReasonPrivate}
	joined := fmt.Errorf("hybroute: call on cloud session %q: %w", "k::local", errors.Join(meta, priv))
	text := describe(joined, &call{}, "k")
	assert.Equal(t, "blocked: http://169.254.169.254/ targets a cloud metadata endpoint; no browser opened it. Do not retry it; no setting allows it.\n"+
		"blocked: http://10.0.0.1/ targets a private or internal address that this configuration does not let a browser open; no browser opened it. Do not retry it; if the user needs this address, they must allow private addresses in the configuration.", text)

	landed := fmt.Errorf("hybroute: the page landed on a blocked address: %w", meta)
	assert.Contains(t, describe(landed, &call{ran: true}, "k"), "blocked: the page tried to load http://169.254.169.254/, which targets a cloud metadata endpoint")

	pe := &provider.Error{Provider: "Browserbase", Op: "create", Status: 429, Code: "RATE_LIMIT_EXCEEDED"}
	both := fmt.Errorf("hybroute: session %q: %w", "k", fmt.Errorf("%w: cloud: %w; local: %w", hybroute.ErrFallbackFailed, pe, hybroute.ErrNoChromium))
	text = describe(both, &call{}, "k")
	assert.Contains(t, text, "no browser could be started for this session: the cloud provider failed (cloud browser provider Browserbase: create session failed: HTTP 429 RATE_LIMIT_EXCEEDED)")
	assert.Contains(t, text, "no Chromium is installed")
	assert.NotContains(t, text, `session "k"`)

	noLocal := fmt.Errorf("hybroute: session %q: %w", "k", fmt.Errorf("%w: $CHROMIUM=%q: not executable", hybroute.ErrNoChromium, "/home/u/chromium"))
	text = describe(noLocal, &call{}, "k")
	assert.Contains(t, text, "--chromium PATH (or CHROMIUM=PATH)", "the fix is named")
	assert.NotContains(t, text, "/home/u", "the machine's paths stay in its log")

	many := fmt.Errorf("hybroute: plan: %w", fmt.Errorf("%w: the call names 5000 hosts to resolve, the limit is 4096 (WithMaxHostsPerCall)", netpolicy.ErrTooManyHosts))
	assert.Equal(t, "too many hosts in one call: the call names 5000 hosts to resolve, the limit is 4096 (WithMaxHostsPerCall). "+
		"Nothing ran and no page was opened: split the work into calls that each name fewer hosts.", describe(many, &call{}, "k"))

	nocdp := fmt.Errorf("hybroute: session %q: %w", "k", fmt.Errorf("wrapped: %w", &fakeNoCDP{}))
	assert.Equal(t, (&fakeNoCDP{}).Error(), describe(nocdp, &call{}, "k"))

	other := fmt.Errorf("hybroute: call on local session %q: %w", "k::local", errors.New("-32000 Node is not an element"))
	assert.Equal(t, "the browser call failed: -32000 Node is not an element", describe(other, &call{ran: true}, "k"))

	assert.Contains(t, describe(fmt.Errorf("x: %w", context.DeadlineExceeded), &call{ran: true}, "k"), "timed out")

	// A timeout says which part of the call ran out: the page, the script
	// or the opening; the queue's is a busy answer, never a slow site.
	deadline := fmt.Errorf("x: %w", context.DeadlineExceeded)
	assert.True(t, strings.HasPrefix(describe(deadline, &call{ran: true}, "k"), "the page timed out"))
	assert.True(t, strings.HasPrefix(describe(deadline, &call{ran: true, script: true}, "k"), "the script timed out"))
	assert.True(t, strings.HasPrefix(describe(deadline, &call{}, "k"), "timed out opening the browser session"))
	queued := fmt.Errorf("hybroute: session %q: %w", "k::local", &hybroute.BusyError{Ahead: 30, Estimate: 45 * time.Second, Budget: 20 * time.Second})
	text = describe(queued, &call{}, "k")
	assert.Equal(t, "busy: the local browser is opening tabs for other sessions (30 queued ahead, about 45s, longer than this call may wait). "+
		"Nothing ran and no page was opened; try again in a few seconds.", text)
	waited := fmt.Errorf("x: %w", &hybroute.BusyError{Ahead: 3, Waited: 60 * time.Second})
	assert.Contains(t, describe(waited, &call{}, "k"), "busy: the local browser is opening tabs for other sessions (this call waited 1m0s in the queue, its limit)")
	capped := fmt.Errorf("x: %w: 100 sessions are open", hybroute.ErrBusy)
	assert.True(t, strings.HasPrefix(describe(capped, &call{}, "k"), "busy: the browser keeps as many sessions as it may"))
	room := fmt.Errorf("x: %w", &hybroute.BusyError{Sessions: 50, Waited: 60 * time.Second})
	assert.Equal(t, "busy: the browser keeps at most 50 sessions, and every one is running a call (this call waited 1m0s for one to be free, its limit). "+
		"Nothing ran and no page was opened; try again in a few seconds.", describe(room, &call{}, "k"))
	foreseen := fmt.Errorf("x: %w", &hybroute.BusyError{Sessions: 50, Estimate: 2 * time.Minute, Budget: time.Minute})
	assert.Contains(t, describe(foreseen, &call{}, "k"), "(about 2m0s before one is free, longer than this call may wait; it did not wait)")
	for _, err := range []error{queued, waited, capped, room, foreseen} {
		assert.NotContains(t, describe(err, &call{}, "k"), "slow site")
	}
	assert.Equal(t, "a ref", describe(fmt.Errorf("hybroute: call: %w", modeltext.Errorf("a ref")), &call{ran: true}, "k"))

	// A page that did not load says why, in the same words whichever
	// browser's text it came from.
	for _, browser := range []string{"net::ERR_TUNNEL_CONNECTION_FAILED", "net::ERR_NAME_NOT_RESOLVED"} {
		unresolved := fmt.Errorf("hybroute: call on local session %q: %w", "k::local",
			&hybroute.NetworkError{URL: "https://dashboard.example.com/", Host: "dashboard.example.com", Err: hybroute.ErrNameNotResolved,
				Browser: &chromedp.LoadError{ErrorText: browser}})
		assert.Equal(t, "the page did not load: dashboard.example.com does not resolve: the name has no address. Check the URL's spelling; the site may not exist.",
			describe(unresolved, &call{ran: true}, "k"))
	}
	ungranted := &hybroute.NetworkError{URL: "http://10.0.0.5/", Host: "10.0.0.5", Addr: "10.0.0.5:80", By: "egress",
		Err: &netpolicy.BlockedError{URL: "10.0.0.5:80", Class: netpolicy.ClassPrivate, Reason: netpolicy.ReasonPrivateNotNamed}}
	assert.Equal(t, "the page did not load: refused by the egress check, which decides every connection of the local browser (private_not_named): "+
		"the request for http://10.0.0.5/ targets a private or internal address that this configuration does not let a browser open. Nothing was loaded from it. "+
		"A page reaches a private host only while a call names it: if the user wants it opened, navigate to it (or name its URL in browser_exec's code).",
		describe(fmt.Errorf("x: %w", ungranted), &call{ran: true}, "k"))
}

// fakeNoCDP stands for the Router's no-CDP error, whose text is SPEC's.
type fakeNoCDP struct{}

func (*fakeNoCDP) Error() string {
	return "Cloud browser provider X returned no CDP endpoint, so Browser Use mode cannot drive it. Switch to the built-in browser tools for this provider."
}
func (*fakeNoCDP) Unwrap() error { return hybroute.ErrNoCDPEndpoint }

func TestPressKeysParsing(t *testing.T) {
	hybroutetest.Parallel(t)
	for _, k := range []string{"Enter", "Tab", "ArrowDown", "PageDown", "Escape", "Backspace", "F5", "Home", "Esc", "Space"} {
		_, ok := keyNames[k]
		assert.True(t, ok, k)
	}
}

// TestUploadRefusalTellsNothingOfTheFile: the refusal of a path outside the
// upload directory reads the same whether a file is there or not.
func TestUploadRefusalTellsNothingOfTheFile(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "exists"), []byte("x"), 0o600))
	text := func(p string) string {
		_, err := uploadPaths(dir, []string{p})
		require.Error(t, err, p)
		return strings.ReplaceAll(err.Error(), strconv.Quote(p), "PATH")
	}
	for _, pair := range [][2]string{
		{filepath.Join(outside, "exists"), filepath.Join(outside, "missing")},
		{"../" + filepath.Base(outside) + "/exists", "../" + filepath.Base(outside) + "/missing"},
		{"/etc/passwd", "/nonexistent"},
		{outside, outside + "-missing"},
	} {
		there, gone := text(pair[0]), text(pair[1])
		assert.Equal(t, there, gone, "%s and %s", pair[0], pair[1])
		assert.Contains(t, there, "outside the upload directory")
	}
}

// TestAnAbortedLoadIsNotBlamedOnTheSite: a navigation the browser gave up
// (the page's own navigation took over) is not told to check whether the
// site is up; another load error still is.
func TestAnAbortedLoadIsNotBlamedOnTheSite(t *testing.T) {
	aborted := describe(fmt.Errorf("hybroute: call on local session %q: %w", "s::local", &chromedp.LoadError{ErrorText: "net::ERR_ABORTED"}), &call{ran: true}, "s")
	assert.Contains(t, aborted, "the browser abandoned this navigation (net::ERR_ABORTED)")
	assert.Contains(t, aborted, "a navigation of its own")
	assert.NotContains(t, aborted, "whether the site is up")
	refused := describe(&chromedp.LoadError{ErrorText: "net::ERR_UNSAFE_PORT"}, &call{ran: true}, "s")
	assert.Contains(t, refused, "net::ERR_UNSAFE_PORT. Check the URL, or whether the site is up.")
}

// TestHandoffNamesTheProvidersLiveView: the hand-off's answer names the
// cloud provider's live view of an open cloud session, and nothing for a
// local one or a cloud one without a view.
func TestHandoffNamesTheProvidersLiveView(t *testing.T) {
	cloud := hybroute.SessionStatus{Open: true, Route: route.Cloud, LiveViewURL: "https://live.example.com/s/1"}
	assert.Equal(t, ` The cloud provider's own live view of this browser is "https://live.example.com/s/1".`, providerView(cloud))
	local := cloud
	local.Route = route.Local
	assert.Empty(t, providerView(local))
	assert.Empty(t, providerView(hybroute.SessionStatus{Open: true, Route: route.Cloud}))
}
