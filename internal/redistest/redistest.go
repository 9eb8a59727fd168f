// Package redistest runs a real redis-server for tests: on a loopback port
// of its own, in a temporary directory, with no persistence.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binary is the redis-server the tests run ($REDIS_SERVER, else on PATH,
// else Debian's).
func Binary() (string, bool) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, true
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, true
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", true
	}
	return "", false
}

// Server is one running redis-server.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts a redis-server, or skips the test with a clear message when
// none is installed. It stops with the test.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, ok := Binary()
	if !ok {
		t.Skip("skipping: this test needs a real redis-server and none is installed " +
			"(apt-get install -y redis-server, or set $REDIS_SERVER)")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), Addr: freeAddr(t)}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Restart starts the server (again) on its address, and waits until it
// answers.
func (s *Server) Restart() {
	s.t.Helper()
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr) == nil {
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("redis-server exited at start on %s", s.Addr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	s.t.Fatalf("redis-server on %s did not answer within 30 s", s.Addr)
}

// Stop kills the server and waits for it; it is idempotent.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("redis-server %d did not exit", s.cmd.Process.Pid)
	}
	s.cmd = nil
}

// ping sends PING and expects PONG.
func ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis answered %q", line)
	}
	return nil
}
