package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"
)

// TestProxyOfTwoModules: a repository with a library and a module below it
// that requires the library at the placeholder goes into the proxy at one
// version; the module's go.mod there requires the library at that version;
// the library's zip holds its files, not the module's, nor a file git
// ignores.
func TestProxyOfTwoModules(t *testing.T) {
	repo := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("go.mod", "module example.com/Lib\n\ngo 1.26\n")
	write("lib.go", "package lib\n")
	write(".gitignore", "/built\n")
	write("built", "not a source\n")
	write("cmd/go.mod", "module example.com/Lib/cmd\n\ngo 1.26\n\nrequire example.com/Lib v0.0.0-00010101000000-000000000000\n")
	write("cmd/main.go", "package main\n\nimport _ \"example.com/Lib\"\n\nfunc main() {}\n")
	git := exec.Command("git", "init", "-q")
	git.Dir = repo
	require.NoError(t, git.Run())

	out := t.TempDir()
	const v = "v0.0.0-20261206010203-abcdefabcdef"
	when := time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)
	require.NoError(t, run(out, v, when, []string{repo, filepath.Join(repo, "cmd")}))

	// Upper case is escaped in the proxy's paths.
	lib := filepath.Join(out, "example.com", "!lib", "@v")
	list, err := os.ReadFile(filepath.Join(lib, "list"))
	require.NoError(t, err)
	assert.Equal(t, v+"\n", string(list))
	info, err := os.ReadFile(filepath.Join(lib, v+".info"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"Version":"`+v+`","Time":"2026-12-06T01:02:03Z"}`, string(info))

	zr, err := zip.OpenReader(filepath.Join(lib, v+".zip"))
	require.NoError(t, err)
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	// Inside the zip the path is not escaped.
	assert.Equal(t, []string{"example.com/Lib@" + v + "/.gitignore", "example.com/Lib@" + v + "/go.mod", "example.com/Lib@" + v + "/lib.go"}, names)

	mod, err := os.ReadFile(filepath.Join(out, "example.com", "!lib", "cmd", "@v", v+".mod"))
	require.NoError(t, err)
	f, err := modfile.Parse("go.mod", mod, nil)
	require.NoError(t, err)
	require.Len(t, f.Require, 1)
	assert.Equal(t, "example.com/Lib", f.Require[0].Mod.Path)
	assert.Equal(t, v, f.Require[0].Mod.Version)
}

// TestReplaceIsRefused: a module whose go.mod replaces anything does not go
// into the proxy, since go install ...@version would refuse it.
func TestReplaceIsRefused(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/m\n\ngo 1.26\n\nreplace example.com/x => ../x\n"), 0o644))
	err := run(t.TempDir(), "v0.0.0-20261206010203-abcdefabcdef", time.Now(), []string{repo})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replace directive")
}
