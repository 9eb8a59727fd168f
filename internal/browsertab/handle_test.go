package browsertab

import (
	"context"
	"errors"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serverTab is a tab whose browser is reached without CDP: it has one page
// and no browser context of its own.
type serverTab struct{ ctx context.Context }

func (t serverTab) Context() context.Context                { return t.ctx }
func (t serverTab) Dead() bool                              { return t.ctx.Err() != nil }
func (t serverTab) WrapErr(err error) error                 { return err }
func (t serverTab) Replace(context.Context) (func(), error) { return nil, errors.New("not replaced") }
func (t serverTab) BrowserContextID() cdp.BrowserContextID  { return "" }

// A call bound through the handle ends with its caller and with the tab,
// and never ends the tab.
func TestHandleBindsToTheTab(t *testing.T) {
	tabCtx, endTab := context.WithCancel(context.Background())
	h := NewHandle(serverTab{tabCtx})
	_, paged := h.Paged()
	assert.False(t, paged, "a tab without pages is no PagedTab")

	caller, endCall := context.WithCancel(context.Background())
	cctx, cancel := h.Bind(caller)
	endCall()
	<-cctx.Done()
	cancel()
	assert.NoError(t, tabCtx.Err(), "the call's end leaves the tab")
	assert.False(t, h.Dead())

	cctx, cancel = h.Bind(context.Background())
	defer cancel()
	endTab()
	<-cctx.Done()
	assert.True(t, h.Dead(), "the tab's end is the handle's")
}

// The records start empty, and the handle keeps what it was told.
func TestHandleRecords(t *testing.T) {
	h := NewHandle(serverTab{context.Background()})
	_, ok := h.Landed()
	assert.False(t, ok, "no landed URL before the server reported one")
	h.SetLanded("https://example.com/a")
	u, ok := h.Landed()
	require.True(t, ok)
	assert.Equal(t, "https://example.com/a", u)

	assert.False(t, h.ProbeFirst())
	h.SetProbeFirst(true)
	assert.True(t, h.ProbeFirst())

	h.Origins.Add("https://a.test", 2)
	h.Origins.Add("https://b.test", 2)
	h.Origins.Add("https://c.test", 2)
	h.Origins.Add("https://a.test", 2)
	assert.ElementsMatch(t, []string{"https://a.test", "https://b.test"}, h.Origins.List(), "origins are kept once, up to the bound")
}

// A swap of the front returns the page it was, with its stop.
func TestFrontSwap(t *testing.T) {
	var f Front
	assert.Nil(t, f.Get())
	assert.Nil(t, f.Stopper())
	a, stopA := context.WithCancel(context.Background())
	old, oldStop := f.Swap(a, stopA)
	assert.Nil(t, old)
	assert.Nil(t, oldStop)
	b, stopB := context.WithCancel(context.Background())
	defer stopB()
	old, oldStop = f.Swap(b, stopB)
	assert.Equal(t, a, old)
	require.NotNil(t, oldStop)
	oldStop()
	assert.Error(t, a.Err(), "the stop returned is the old page's")
	assert.Equal(t, b, f.Get())
	assert.NoError(t, b.Err())
}
