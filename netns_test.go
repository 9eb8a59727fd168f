package hybroute

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Escapes are recorded, not guessed. A test that asserts a browser reached
// nothing it must not runs in a network namespace of its own (unshare -n),
// where the addresses a page could escape to are decoys on lo, each with
// listeners that record every connection. The namespace has nothing but
// lo, so nothing leaves the machine, and a connection that reached a decoy
// is an escape the test sees, with the request line it carried.

// netnsEnv tells a test binary that it is the copy running inside the
// namespace.
const netnsEnv = "HYBROUTE_TEST_NETNS"

// decoyV4 and decoyV6 are the decoy addresses: the metadata endpoints, one
// address of each private range, and loopback (already on lo).
var (
	decoyV4 = []string{"169.254.169.254", "169.254.170.2", "100.100.100.200", "10.0.0.5",
		"172.16.0.5", "192.168.1.10", "100.64.0.5", "127.0.0.1"}
	decoyV6 = []string{"fd00:ec2::254", "fd12:3456::5", "::1"}
)

// decoyPorts are the ports every decoy listens on.
var decoyPorts = []string{"80", "443", "8080"}

// escape is one connection that reached a decoy.
type escape struct {
	addr string // decoy address:port
	line string // the first line it sent, if any
}

func (e escape) String() string { return e.addr + " " + e.line }

// connectionOnly reports whether the connection carried no request: it
// sent nothing, or only a TLS ClientHello (a record of type handshake).
// Chromium opens such connections ahead of requests (preconnects); the
// guard holds the request itself, so it never goes out on them.
func (e escape) connectionOnly() bool {
	return e.line == "" || strings.HasPrefix(e.line, "\x16\x03")
}

// decoys records the connections that reached the decoy addresses.
type decoys struct {
	mu   sync.Mutex
	seen []escape
}

// escapes is what reached the decoys so far.
func (d *decoys) escapes() []escape {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]escape(nil), d.seen...)
}

// reset forgets what was recorded.
func (d *decoys) reset() {
	d.mu.Lock()
	d.seen = nil
	d.mu.Unlock()
}

// inNetns runs the calling test inside a network namespace with the
// decoys. Inside it returns the decoys. Outside it runs the test again, in
// a copy of the test binary under unshare -n, fails this test if that copy
// did not pass, and returns nil: the caller then returns at once; the
// caller is parallel from there on. Tests are skipped where namespaces
// cannot be made (not root, no unshare).
func inNetns(t *testing.T) *decoys {
	t.Helper()
	if os.Getenv(netnsEnv) == t.Name() {
		return startDecoys(t)
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: recording escapes needs a network namespace, which needs root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("skipping: recording escapes needs unshare(1)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: recording escapes needs ip(8)")
	}
	// Out here the test only waits for its copy, which has a network
	// namespace and browsers of its own: it waits beside the other
	// parallel tests rather than holding up the run.
	t.Parallel()
	timeout := 10 * time.Minute
	if dl, ok := t.Deadline(); ok {
		timeout = time.Until(dl) - 10*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "-n", "--", os.Args[0],
		"-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v",
		// The copy runs this one test; its parallel subtests wait mostly
		// on the browser, so more of them run at once than there are CPUs.
		"-test.parallel=8",
		// The copy skips what this run skips.
		"-test.short="+strconv.FormatBool(testing.Short()),
		"-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), netnsEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	// The test's own result line, not a subtest's, whose name starts with
	// the same text: a skipped subtest must not hide a failure.
	result := func(r string) bool {
		return regexp.MustCompile(`(?m)^--- ` + r + `: ` + regexp.QuoteMeta(t.Name()) + ` \(`).Match(out)
	}
	switch {
	case err != nil:
		t.Fatalf("inside its network namespace (%v):\n%s", err, out)
	case result("SKIP"):
		t.Skipf("skipped inside its network namespace:\n%s", out)
	case !result("PASS"):
		t.Fatalf("inside its network namespace (%v):\n%s", err, out)
	case testing.Verbose():
		t.Logf("inside its network namespace:\n%s", out)
	}
	return nil
}

// startDecoys brings lo up, puts the decoy addresses on it and listens on
// each. Inside the namespace only.
func startDecoys(t *testing.T) *decoys {
	t.Helper()
	ip := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("link", "set", "lo", "up")
	for _, a := range decoyV4 {
		if a != "127.0.0.1" {
			ip("addr", "add", a+"/32", "dev", "lo")
		}
	}
	for _, a := range decoyV6 {
		if a != "::1" {
			ip("-6", "addr", "add", a+"/128", "dev", "lo", "nodad")
		}
	}
	// An address added to lo may not be routable yet when ip returns (seen
	// with IPv6): a decoy that cannot be reached would hide an escape. A
	// port no decoy listens on answers "refused" once the address is up.
	for _, a := range append(append([]string(nil), decoyV4...), decoyV6...) {
		for deadline := time.Now().Add(10 * time.Second); ; {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(a, "9"), time.Second)
			if err == nil {
				_ = c.Close()
			}
			if err == nil || errors.Is(err, syscall.ECONNREFUSED) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("decoy %s is not reachable: %v", a, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	d := &decoys{}
	for _, a := range append(append([]string(nil), decoyV4...), decoyV6...) {
		for _, p := range decoyPorts {
			l, err := net.Listen("tcp", net.JoinHostPort(a, p))
			if err != nil {
				t.Fatalf("decoy %s: %v", net.JoinHostPort(a, p), err)
			}
			t.Cleanup(func() { _ = l.Close() })
			go d.serve(l)
		}
	}
	return d
}

// serve records each connection and answers an HTTP request with a page
// that would be readable, so what a browser could read shows too.
func (d *decoys) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			d.mu.Lock()
			if len(d.seen) < 1000 {
				d.seen = append(d.seen, escape{addr: l.Addr().String(), line: strings.TrimSpace(line)})
			}
			d.mu.Unlock()
			if strings.HasPrefix(line, "GET ") || strings.HasPrefix(line, "POST ") {
				_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAccess-Control-Allow-Origin: *\r\nContent-Length: 5\r\nConnection: close\r\n\r\ndecoy"))
			}
		}()
	}
}

// TestNetnsRecordsEscapes checks the harness itself: a connection to a
// decoy is recorded with its request line, and nothing else is.
func TestNetnsRecordsEscapes(t *testing.T) {
	d := inNetns(t)
	if d == nil {
		return
	}
	if len(d.escapes()) != 0 {
		t.Fatalf("escapes before any connection: %v", d.escapes())
	}
	for _, a := range []string{"10.0.0.5:80", "[fd00:ec2::254]:443"} {
		c, err := net.Dial("tcp", a)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte("GET /probe HTTP/1.1\r\n\r\n"))
		_, _ = c.Read(make([]byte, 1))
		_ = c.Close()
	}
	got := d.escapes()
	if len(got) != 2 || got[0].line != "GET /probe HTTP/1.1" {
		t.Fatalf("recorded %v, want the two probes", got)
	}
}
