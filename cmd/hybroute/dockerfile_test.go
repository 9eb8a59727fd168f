package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerInstructions are the instructions a Dockerfile may use.
var dockerInstructions = map[string]bool{"FROM": true, "RUN": true, "CMD": true, "LABEL": true, "EXPOSE": true,
	"ENV": true, "ADD": true, "COPY": true, "ENTRYPOINT": true, "VOLUME": true, "USER": true, "WORKDIR": true,
	"ARG": true, "ONBUILD": true, "STOPSIGNAL": true, "HEALTHCHECK": true, "SHELL": true}

// TestDockerfile checks what CI can without Docker: the Dockerfile parses
// (known instructions, FROM first, every COPY --from names an earlier
// stage, ENTRYPOINT is a JSON array running hybroute mcp), the final stage
// runs as a user that is not root, and the go build it runs builds, in the
// directory it runs in (the stage's first WORKDIR is the repository root).
func TestDockerfile(t *testing.T) {
	hybroutetest.Parallel(t)
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	var lines []string
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if cur == "" && (t == "" || strings.HasPrefix(t, "#")) {
			continue
		}
		if strings.HasSuffix(t, "\\") {
			cur += strings.TrimSuffix(t, "\\") + " "
			continue
		}
		lines = append(lines, cur+t)
		cur = ""
	}
	require.Empty(t, cur, "a continued line runs off the end")
	require.NotEmpty(t, lines)
	stages := map[string]bool{}
	var user, build string
	var entry []string
	var srcRoot, workdir, buildDir string
	for i, l := range lines {
		instr, args, _ := strings.Cut(l, " ")
		instr = strings.ToUpper(instr)
		require.True(t, dockerInstructions[instr], "unknown instruction %q", instr)
		if i == 0 {
			require.Equal(t, "FROM", instr, "the first instruction")
		}
		switch instr {
		case "FROM":
			if m := regexp.MustCompile(`(?i)\sAS\s+(\S+)$`).FindStringSubmatch(args); m != nil {
				stages[m[1]] = true
			}
			user, srcRoot, workdir = "", "", ""
		case "WORKDIR":
			if srcRoot == "" {
				srcRoot = args
			}
			workdir = args
		case "COPY":
			if m := regexp.MustCompile(`--from=(\S+)`).FindStringSubmatch(args); m != nil {
				assert.True(t, stages[m[1]], "COPY --from=%s names no earlier stage", m[1])
			}
		case "USER":
			user = args
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(args), &entry), "ENTRYPOINT is a JSON array")
		case "RUN":
			if strings.Contains(args, "go build") {
				build = args
				rel, err := filepath.Rel(srcRoot, workdir)
				require.NoError(t, err, "the go build runs outside the sources: WORKDIR %q", workdir)
				require.False(t, strings.HasPrefix(rel, ".."), "the go build runs outside the sources: WORKDIR %q", workdir)
				buildDir = filepath.Join(root, rel)
			}
		}
	}
	assert.NotEmpty(t, user, "the final stage runs as root")
	assert.NotEqual(t, "root", user)
	assert.Equal(t, []string{"hybroute", "mcp"}, entry)
	require.NotEmpty(t, build, "no go build")

	env := []string{}
	fields := strings.Fields(build)
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		env = append(env, fields[0])
		fields = fields[1:]
	}
	require.Equal(t, []string{"go", "build"}, fields[:2])
	for i, f := range fields {
		if f == "-o" {
			fields[i+1] = filepath.Join(t.TempDir(), "hybroute")
		}
	}
	if testing.Short() {
		t.Skip("skipping the go build the Dockerfile runs (-short): the Dockerfile itself checked out")
	}
	cmd := exec.Command(fields[0], fields[1:]...)
	cmd.Dir = buildDir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", build, out)
}
