package cdpmux

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/chromedp/cdproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPipeConnKeepsNoMessageSizedBuffer: after a 8 MB message is read
// and let go, the connection holds nothing of its size (chromedp's
// PipeConn keeps its decoder's buffer as large as the largest message it
// read, for the browser's life), and it reads on.
func TestPipeConnKeepsNoMessageSizedBuffer(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	c := newPipeConn(r, w)
	t.Cleanup(func() { _ = c.Close() })
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()

	big := fmt.Sprintf(`{"id":1,"result":{"v":%q}}`, strings.Repeat("x", 8<<20))
	go func() {
		_, _ = w.Write(append([]byte(big), 0))
		_, _ = w.Write(append([]byte(`{"id":2,"result":{}}`), 0))
	}()
	msg := new(cdproto.Message)
	require.NoError(t, c.Read(context.Background(), msg))
	assert.Equal(t, int64(1), msg.ID)
	assert.Greater(t, len(msg.Result), 8<<20)
	msg = new(cdproto.Message)

	after := heap()
	t.Logf("heap: %.1f MB before, %.1f MB after the message", float64(base)/(1<<20), float64(after)/(1<<20))
	assert.Less(t, after, base+2<<20, "nothing of the message's size is kept")
	require.NoError(t, c.Read(context.Background(), msg))
	assert.Equal(t, int64(2), msg.ID)
	runtime.KeepAlive(c)
}
