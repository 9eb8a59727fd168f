//go:build unix

package egress

import (
	"net"
	"syscall"
)

// readableWaiter returns a function that waits until c has bytes to read
// (or an end, an error or its read deadline) without reading them, so an
// idle tunnel holds no buffer; nil when c is not a socket.
func readableWaiter(c net.Conn) func() error {
	if pc, ok := c.(*conn); ok {
		c = pc.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var b [1]byte
	ready := func(fd uintptr) bool {
		for {
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			switch err {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // nothing yet: the poller waits
			}
			return true // bytes, the end, or an error the Read will see
		}
	}
	return func() error { return rc.Read(ready) }
}
