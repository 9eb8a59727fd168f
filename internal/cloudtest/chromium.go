// Package cloudtest holds test helpers for hybroute: a real headless
// Chromium that stands in for a cloud browser, and httptest servers that speak
// the session APIs of the cloud browser providers and hand out that
// Chromium's CDP endpoint.
//
// Everything here listens on loopback only and sends no traffic anywhere else.
package cloudtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/testenv"
	"github.com/hybroute/hybroute/internal/testlog"
)

// Chromium is a running headless Chromium with a DevTools websocket on
// 127.0.0.1.
type Chromium struct {
	// WSURL is the browser's DevTools websocket URL,
	// ws://127.0.0.1:PORT/devtools/browser/ID.
	WSURL string
	// HTTPURL is http://127.0.0.1:PORT, where Chromium serves /json/version.
	HTTPURL string
	// DataDir is the temporary --user-data-dir.
	DataDir string

	cmd    *exec.Cmd
	done   chan struct{}
	stderr *testlog.Buffer

	closeOnce sync.Once
}

// startTimeout bounds how long Chromium may take to open its DevTools port.
const startTimeout = 30 * time.Second

// LaunchChromium launches a real headless Chromium for the test: the
// stand-in cloud browser. The process (and its process group) is killed and
// reaped in t.Cleanup. The test is skipped, with the reason, under -short
// and when no Chromium is installed. Extra flags (such as
// --user-agent=cloud, to tell the browsers apart in a test, or
// --host-resolver-rules) are added to Flags.
func LaunchChromium(t testing.TB, extra ...string) *Chromium {
	t.Helper()
	testenv.RequireChromium(t)
	path := testenv.ChromiumPath()
	dir := t.TempDir()
	c, err := launch(path, dir, extra)
	if err != nil {
		t.Fatalf("cloudtest: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Flags returns the command-line flags StartChromium passes, without the
// binary.
func Flags(dataDir string) []string {
	flags := []string{
		"--headless",
		"--remote-debugging-port=0",
		"--remote-debugging-address=127.0.0.1",
		"--user-data-dir=" + dataDir,
		"--disable-background-networking",
		"--disable-component-update",
		"--disable-sync",
		"--disable-default-apps",
		"--disable-extensions",
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-gpu",
		"--disable-dev-shm-usage",
		"--mute-audio",
	}
	if os.Geteuid() == 0 {
		flags = append(flags, "--no-sandbox")
	}
	return append(flags, "about:blank")
}

func launch(path, dir string, extra []string) (*Chromium, error) {
	flags := Flags(dir)
	// about:blank stays last: flags after the URL would be URLs too.
	flags = append(append(flags[:len(flags)-1:len(flags)-1], extra...), flags[len(flags)-1])
	cmd := exec.Command(path, flags...)
	stderr := &testlog.Buffer{Max: 1 << 20}
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	c := &Chromium{cmd: cmd, done: make(chan struct{}), stderr: stderr, DataDir: dir}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()

	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if ws, ok := readActivePort(dir); ok {
			c.WSURL = ws
			c.HTTPURL = "http://" + strings.SplitN(strings.TrimPrefix(ws, "ws://"), "/", 2)[0]
			return c, nil
		}
		if ws, ok := devToolsLine(c.stderr); ok {
			c.WSURL = ws
			c.HTTPURL = "http://" + strings.SplitN(strings.TrimPrefix(ws, "ws://"), "/", 2)[0]
			return c, nil
		}
		select {
		case <-c.done:
			return nil, fmt.Errorf("chromium exited before opening its DevTools port: %s", tail(c.stderr))
		case <-deadline.C:
			c.Close()
			return nil, fmt.Errorf("chromium did not open its DevTools port within %s: %s", startTimeout, tail(c.stderr))
		case <-tick.C:
		}
	}
}

// readActivePort reads DIR/DevToolsActivePort: the port on the first line,
// the browser's websocket path on the second.
func readActivePort(dir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
	if err != nil {
		return "", false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 {
		return "", false // still being written
	}
	port, path := strings.TrimSpace(lines[0]), strings.TrimSpace(lines[1])
	if port == "" || !strings.HasPrefix(path, "/devtools/browser/") {
		return "", false
	}
	return "ws://127.0.0.1:" + port + path, true
}

// Close kills Chromium's process group and waits for the process to exit.
// It is safe to call more than once.
func (c *Chromium) Close() {
	c.closeOnce.Do(func() {
		killProcessGroup(c.cmd)
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
		}
	})
}

// Exited reports whether the Chromium process has exited.
func (c *Chromium) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// devToolsLine finds the DevTools address in Chromium's output.
func devToolsLine(out *testlog.Buffer) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "DevTools listening on "); i >= 0 {
			ws := strings.TrimSpace(line[i+len("DevTools listening on "):])
			if strings.HasPrefix(ws, "ws://") {
				return ws, true
			}
		}
	}
	return "", false
}

// tail is the end of Chromium's output, for error messages.
func tail(out *testlog.Buffer) string {
	s := out.String()
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}
