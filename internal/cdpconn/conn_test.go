package cdpconn

import (
	"context"
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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"result":{"a":"first"}}`))
		_ = c.Write(ctx, websocket.MessageText, []byte(`{"id":2,"result":{"b":"second, and longer than the first"}}`))
		_ = c.Close(websocket.StatusNormalClosure, "bye")
	}))
	defer srv.Close()

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
