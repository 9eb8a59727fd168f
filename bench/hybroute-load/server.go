package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hybroute/hybroute/internal/procfs"
)

// server is one "hybroute mcp --http" process on loopback.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}

	mu        sync.Mutex
	peakRSS   int64 // bytes, the server process's own
	peakChrom int64 // bytes, the PSS of every process under the server (its Chromium)
	lines     []string
}

// startServer runs bin with "mcp --http 127.0.0.1:0" and extra flags, and
// waits until it says where it serves.
func startServer(ctx context.Context, bin string, extra []string, logTo io.Writer) (*server, error) {
	args := append([]string{"mcp", "--http", "127.0.0.1:0", "--provider", "none"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if logTo != nil {
				fmt.Fprintln(logTo, line)
			}
			if _, after, ok := strings.Cut(line, "serving MCP on "); ok {
				select {
				case found <- strings.TrimSpace(after):
				default:
				}
			}
			s.mu.Lock()
			if len(s.lines) < 200 {
				s.lines = append(s.lines, line)
			}
			s.mu.Unlock()
		}
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	select {
	case u := <-found:
		s.url = u
	case <-s.done:
		return nil, fmt.Errorf("the server exited before serving: %s", strings.Join(s.log(), "\n"))
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, errors.New("the server did not say where it serves within 30 s")
	case <-ctx.Done():
		s.stop()
		return nil, ctx.Err()
	}
	go s.sample()
	return s, nil
}

func (s *server) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lines...)
}

// sample records the peak memory of the server and of its Chromium every
// 250 ms until the server exits.
func (s *server) sample() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	pid := s.cmd.Process.Pid
	for {
		rss := statusBytes(pid, "VmRSS:")
		var chrom int64
		for _, p := range descendants(pid) {
			chrom += pssBytes(p)
		}
		s.mu.Lock()
		s.peakRSS = max(s.peakRSS, rss)
		s.peakChrom = max(s.peakChrom, chrom)
		s.mu.Unlock()
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// current is the server's memory now.
func (s *server) current() (rss, chromium int64) {
	pid := s.cmd.Process.Pid
	for _, p := range descendants(pid) {
		chromium += pssBytes(p)
	}
	return statusBytes(pid, "VmRSS:"), chromium
}

// resetPeak starts the peaks afresh from now.
func (s *server) resetPeak() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peakRSS, s.peakChrom = 0, 0
}

func (s *server) peaks() (rss, chromium int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakRSS, s.peakChrom
}

// stop ends the server with SIGTERM (it closes its sessions and its
// Chromium), then by force after 30 s.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// descendants are the pids whose parent chain reaches pid.
func descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := statusInt(p, "PPid:"); pp > 0 {
			parent[p] = int(pp)
		}
	}
	var out []int
	for p := range parent {
		for q, n := parent[p], 0; q > 0 && n < 64; q, n = parent[q], n+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// statusInt reads a number field of /proc/pid/status.
func statusInt(pid int, field string) int64 {
	return procfs.Number(fmt.Sprintf("/proc/%d/status", pid), field)
}

// statusBytes is a kB field of /proc/pid/status in bytes.
func statusBytes(pid int, field string) int64 {
	return procfs.Bytes(fmt.Sprintf("/proc/%d/status", pid), field)
}

// pssBytes is the proportional set size of pid: shared pages counted once
// across the processes that share them, so the sum over Chromium's
// processes is what they hold together.
func pssBytes(pid int) int64 {
	return procfs.Bytes(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:")
}
