package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
)

// server is one MCP server of the comparison: how to start it and how the
// session's steps are called on it.
type server struct {
	name string
	cmd  func() *exec.Cmd
	// call maps a step of the script to the server's tool and arguments;
	// ref is the element's ref (uid) read from the last snapshot.
	call func(step, url, ref string) (string, map[string]any)
	// refRE finds the ref of an element by its role and name in snapshot
	// text: %s is the role, %s the quoted name.
	refRE string
}

func (s server) ref(text, role, name string) (string, error) {
	re := regexp.MustCompile(fmt.Sprintf(s.refRE, regexp.QuoteMeta(role), regexp.QuoteMeta(`"`+name+`"`)))
	m := re.FindStringSubmatch(text)
	if m == nil {
		return "", fmt.Errorf("%s: no ref for %s %q in the snapshot:\n%.2000s", s.name, role, name, text)
	}
	return m[1], nil
}

// noSandbox: Chromium refuses to start sandboxed as root.
func noSandbox() bool { return os.Geteuid() == 0 }

func hybrouteServer(bin, chromium string) server {
	return server{
		name: "hybroute",
		cmd: func() *exec.Cmd {
			c := exec.Command(bin, "mcp")
			c.Env = append(os.Environ(), "CHROMIUM="+chromium)
			return c
		},
		call: func(step, url, ref string) (string, map[string]any) {
			switch step {
			case stepNavigate, stepNavBig:
				return "browser_navigate", map[string]any{"url": url}
			case stepClick:
				return "browser_click", map[string]any{"ref": ref}
			case stepType:
				return "browser_type", map[string]any{"ref": ref, "text": "shoes"}
			case stepExec:
				return "browser_exec", map[string]any{"code": "1+1"}
			case stepScreenshot:
				return "browser_screenshot", map[string]any{}
			}
			return "browser_snapshot", map[string]any{}
		},
		refRE: `- %s %s[^\n]*?\[ref=(e\d+)\]`,
	}
}

func playwrightServer(cli, chromium string) server {
	return server{
		name: "Playwright MCP",
		cmd: func() *exec.Cmd {
			args := []string{cli, "--headless", "--isolated", "--browser", "chromium", "--executable-path", chromium, "--viewport-size", "1280x720"}
			if noSandbox() {
				args = append(args, "--no-sandbox")
			}
			return exec.Command("node", args...)
		},
		call: func(step, url, ref string) (string, map[string]any) {
			switch step {
			case stepNavigate, stepNavBig:
				return "browser_navigate", map[string]any{"url": url}
			case stepClick:
				return "browser_click", map[string]any{"target": ref, "element": "the button"}
			case stepType:
				return "browser_type", map[string]any{"target": ref, "element": "the search box", "text": "shoes"}
			case stepExec:
				return "browser_evaluate", map[string]any{"function": "() => 1+1"}
			case stepScreenshot:
				return "browser_take_screenshot", map[string]any{"type": "png"}
			}
			return "browser_snapshot", map[string]any{}
		},
		refRE: `- %s %s[^\n]*\[ref=([a-z0-9]+)\]`,
	}
}

func devtoolsServer(index, chromium string) server {
	return server{
		name: "chrome-devtools-mcp",
		cmd: func() *exec.Cmd {
			args := []string{index, "--headless", "--isolated", "--executablePath", chromium, "--viewport", "1280x720",
				"--no-usage-statistics", "--no-performance-crux", "--no-page-id-routing"}
			if noSandbox() {
				args = append(args, "--chromeArg=--no-sandbox")
			}
			c := exec.Command("node", args...)
			c.Env = append(os.Environ(), "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS=1")
			return c
		},
		call: func(step, url, ref string) (string, map[string]any) {
			switch step {
			case stepNavigate, stepNavBig:
				return "navigate_page", map[string]any{"type": "url", "url": url}
			case stepClick:
				return "click", map[string]any{"uid": ref}
			case stepType:
				return "fill", map[string]any{"uid": ref, "value": "shoes"}
			case stepExec:
				return "evaluate_script", map[string]any{"function": "() => 1+1"}
			case stepScreenshot:
				return "take_screenshot", map[string]any{"format": "png"}
			}
			return "take_snapshot", map[string]any{}
		},
		refRE: `uid=(\d+_\d+) %s %s`,
	}
}
