package cdpconn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnOutlivesClientTimeoutAndReusesItsBuffer proves three things of a
// Conn against a real websocket server: the client's Timeout bounds the
// handshake only (a connection used after it still works), a message it
// decoded keeps its bytes when the read buffer is reused for the next one,
// and a normal close reads as io.EOF, as chromedp expects.
func TestConnOutlivesClientTimeoutAndReusesItsBuffer(t *testing.T) {
	srv := wsServer(t, func(ctx context.Context, c *websocket.Conn) {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"result":{"a":"first"}}`))
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":2,"result":{"b":"second, and longer than the first"}}`))
		_ = c.Close(websocket.StatusNormalClosure, "bye")
	})

	hc := &http.Client{Timeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := Dial(ctx, "ws://"+strings.TrimPrefix(srv.URL, "http://")+"/?token=t", hc)
	require.NoError(t, err)
	defer conn.Close()

	time.Sleep(hc.Timeout + hc.Timeout/2)
	require.NoError(t, conn.Write(ctx, &cdproto.Message{ID: 7, Method: "Browser.getVersion"}), "the connection must outlive the client's Timeout")
	var m1, m2, m3 cdproto.Message
	require.NoError(t, conn.Read(ctx, &m1))
	require.NoError(t, conn.Read(ctx, &m2))
	assert.EqualValues(t, 1, m1.ID)
	assert.JSONEq(t, `{"a":"first"}`, string(m1.Result), "the first message must keep its bytes")
	assert.JSONEq(t, `{"b":"second, and longer than the first"}`, string(m2.Result))
	assert.ErrorIs(t, conn.Read(ctx, &m3), io.EOF)
}

// A write whose context has ended is not sent, and the connection lives on:
// the websocket library closes the whole connection when a write's context
// ends, and one caller giving up must not cut every tab's connection.
func TestWriteOnAnEndedContextKeepsTheConnection(t *testing.T) {
	srv := wsServer(t, func(ctx context.Context, c *websocket.Conn) {
		for { // echo each message's id back as a reply
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m cdproto.Message
			if json.Unmarshal(data, &m) != nil {
				return
			}
			if c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"id":%d,"result":{}}`, m.ID)) != nil {
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := Dial(ctx, "ws://"+strings.TrimPrefix(srv.URL, "http://"), nil)
	require.NoError(t, err)
	defer conn.Close()

	ended, end := context.WithCancel(ctx)
	end()
	for i := range 50 {
		// The library picks at random between its lock and an ended
		// context: fifty tries find the close if it is there.
		assert.ErrorIs(t, conn.Write(ended, &cdproto.Message{ID: int64(1000 + i), Method: "Browser.getVersion"}), context.Canceled)
		require.NoError(t, conn.Write(ctx, &cdproto.Message{ID: int64(i + 1), Method: "Browser.getVersion"}), "write %d: the connection must live on", i)
		var m cdproto.Message
		require.NoError(t, conn.Read(ctx, &m))
		require.EqualValues(t, i+1, m.ID, "only the live write was sent")
	}
}

// wsServer serves one websocket per request with serve, closed when serve
// returns; the server ends with the test.
func wsServer(t *testing.T, serve func(ctx context.Context, c *websocket.Conn)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		serve(r.Context(), c)
	}))
	t.Cleanup(srv.Close)
	return srv
}
