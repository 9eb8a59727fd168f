package cdpmux

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the splice writes to chromedp is one NUL-terminated JSON message per
// write, with the fields chromedp decodes, and a reply with no result
// still carries "result":{} (chromedp fails to decode a reply without it).
func TestRawPipeWriterFrames(t *testing.T) {
	for _, row := range []struct {
		name string
		msg  cdproto.Message
		want string
	}{
		{"empty result", cdproto.Message{ID: 4}, `{"id":4,"result":{}}`},
		{"result", cdproto.Message{ID: 5, SessionID: "S", Result: jsonv2.Value(`{"frameId":"F"}`)}, `{"id":5,"sessionId":"S","result":{"frameId":"F"}}`},
		{"error", cdproto.Message{ID: 6, Error: &cdproto.Error{Code: -32000, Message: `refused: "x"`}}, `{"id":6,"error":{"code":-32000,"message":"refused: \"x\""}}`},
		{"event", cdproto.Message{SessionID: `S"1`, Method: "Page.loadEventFired", Params: jsonv2.Value(`{"timestamp":1}`)}, `{"sessionId":"S\"1","method":"Page.loadEventFired","params":{"timestamp":1}}`},
	} {
		t.Run(row.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, (&rawPipeWriter{w: &buf}).write(&row.msg))
			b := buf.Bytes()
			require.NotEmpty(t, b)
			require.Equal(t, byte(0), b[len(b)-1], "NUL-terminated")
			assert.JSONEq(t, row.want, string(b[:len(b)-1]))
			var back cdproto.Message
			require.NoError(t, jsonv2.Unmarshal(b[:len(b)-1], &back))
			assert.Equal(t, row.msg.ID, back.ID)
			assert.Equal(t, row.msg.SessionID, back.SessionID)
			assert.Equal(t, row.msg.Method, back.Method)
		})
	}
}

// A browser not started in pipe mode gets no Mux: the splice says why,
// and the browser still dies with this process and gets the caller's own
// command changes.
func TestSpliceNeedsPipeMode(t *testing.T) {
	var modified bool
	s := NewSplice(Hooks{})
	s.Modify = func(*exec.Cmd) { modified = true }
	cmd := exec.Command("chromium")
	s.modify(cmd)
	require.Error(t, s.Err())
	assert.Contains(t, s.Err().Error(), "pipe mode")
	assert.Nil(t, s.Mux())
	assert.True(t, modified, "the caller's ModifyCmdFunc ran")
	require.NotNil(t, cmd.SysProcAttr)
}

// TestSpliceKeepsTheChildEndsUntilLaunched: a connection that chromedp ends
// while the browser is still being started leaves the child's pipe ends
// open until Launched says the start is over (os/exec reads them while it
// starts the process), and closes them then.
func TestSpliceKeepsTheChildEndsUntilLaunched(t *testing.T) {
	toChildR, toChildW, err := os.Pipe() // chromedp writes, the child reads fd 3
	require.NoError(t, err)
	fromChildR, fromChildW, err := os.Pipe() // the child writes fd 4, chromedp reads
	require.NoError(t, err)
	defer fromChildR.Close()
	s := NewSplice(Hooks{})
	cmd := exec.Command("chromium")
	cmd.ExtraFiles = []*os.File{toChildR, fromChildW}
	s.modify(cmd)
	require.NoError(t, s.Err())
	brR, brW := cmd.ExtraFiles[0], cmd.ExtraFiles[1]
	require.NotSame(t, toChildR, brR, "the child gets pipes of the splice's own")

	// chromedp gives up before the browser ran: its ends go.
	require.NoError(t, toChildW.Close())
	require.NoError(t, toChildR.Close())
	require.NoError(t, fromChildW.Close())
	<-s.Mux().Done()
	s.Wait()
	assert.NotEqual(t, ^uintptr(0), brR.Fd(), "the child's read end stays open while the start may still read it")
	assert.NotEqual(t, ^uintptr(0), brW.Fd(), "the child's write end too")

	s.Launched()
	assert.Equal(t, ^uintptr(0), brR.Fd(), "closed once the start is over")
	assert.Equal(t, ^uintptr(0), brW.Fd())
	s.Launched() // twice is harmless
}
