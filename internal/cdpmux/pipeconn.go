package cdpmux

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/chromedp"
)

// pipeConn is a chromedp.Transport over a browser's pipe, as
// chromedp.PipeConn is, but one that keeps no buffer the size of a
// message once it is read or written: chromedp's reuses one decoder,
// whose buffer grows to the largest message it ever read and stays that
// large for the browser's life (and its writer does the same with its
// encoder's buffer). Each message here is read into a slice of its own
// and decoded from it, and the decoder lets go of it.
type pipeConn struct {
	r  io.ReadCloser
	w  io.WriteCloser
	br *bufio.Reader // its buffer is bufio's default, whatever the messages

	writeMu   sync.Mutex
	closeOnce sync.Once
	closeErr  error
}

var _ chromedp.Transport = (*pipeConn)(nil)

func newPipeConn(r io.ReadCloser, w io.WriteCloser) *pipeConn {
	return &pipeConn{r: r, w: w, br: bufio.NewReader(r)}
}

// Read reads the next message: the bytes up to its zero byte.
func (c *pipeConn) Read(_ context.Context, msg *cdproto.Message) error {
	for {
		b, err := c.br.ReadBytes(0)
		if err != nil {
			if errors.Is(err, io.EOF) && len(b) > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		b = bytes.TrimSuffix(b, []byte{0})
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		*msg = cdproto.Message{}
		return jsonv2.Unmarshal(b, msg, chromedp.DefaultUnmarshalOptions)
	}
}

// Write writes a message and its zero byte in one write, so that no
// other writer's message splits it.
func (c *pipeConn) Write(_ context.Context, msg *cdproto.Message) error {
	b, err := jsonv2.Marshal(msg, chromedp.DefaultMarshalOptions)
	if err != nil {
		return fmt.Errorf("encoding message: %w", err)
	}
	b = append(b, 0)
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("writing message: %w", err)
	}
	return nil
}

// Close closes both ends of the pipe.
func (c *pipeConn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = errors.Join(c.r.Close(), c.w.Close()) })
	return c.closeErr
}
