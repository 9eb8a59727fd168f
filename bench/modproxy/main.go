// Command modproxy writes the repository's modules, as they are in the
// working tree, into a module proxy in a directory, at one version, for
// scripts/install-check.sh: with GOPROXY=file://DIR the go command then
// installs and gets them as a user does from a release.
//
//	go run ./bench/modproxy -out DIR -version v0.0.0-... . ./cmd ./redisstore ...
//
// Each module goes in at DIR/<escaped path>/@v/<version>.{info,mod,zip}
// and is named in list (the layout of the GOPROXY protocol). The files of
// a module are those git knows or would add (tracked, and untracked but
// not ignored), less those of modules below it, as `go mod download` would
// get them from the commit. The modules require each other at a placeholder
// version in the repository (go.work replaces it); in the proxy every
// requirement of a sibling names the version written instead, as the
// go.mod files of a release do.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy's directory (created)")
	version := flag.String("version", "", "the version every module goes in at")
	when := flag.String("time", "", "the version's time, RFC 3339 (default: now)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR -version VERSION [-time RFC3339] MODULE-DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *version == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	t := time.Now().UTC()
	if *when != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, *when); err != nil {
			fail(fmt.Errorf("-time: %w", err))
		}
	}
	if err := run(*out, *version, t, flag.Args()); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "modproxy:", err)
	os.Exit(1)
}

// errNotModule is returned for a directory without a go.mod.
var errNotModule = errors.New("no go.mod")

// mod is one module of the repository.
type mod struct {
	dir  string
	file *modfile.File
}

func run(out, version string, t time.Time, dirs []string) error {
	mods := make([]mod, 0, len(dirs))
	ours := map[string]bool{}
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", dir, errNotModule)
		}
		if err != nil {
			return err
		}
		f, err := modfile.Parse(filepath.Join(dir, "go.mod"), data, nil)
		if err != nil {
			return err
		}
		if f.Module == nil {
			return fmt.Errorf("%s/go.mod: no module line", dir)
		}
		mods = append(mods, mod{dir: dir, file: f})
		ours[f.Module.Mod.Path] = true
	}
	for _, m := range mods {
		if err := write(out, version, t, m, ours); err != nil {
			return fmt.Errorf("%s: %w", m.dir, err)
		}
	}
	return nil
}

// write puts one module into the proxy.
func write(out, version string, t time.Time, m mod, ours map[string]bool) error {
	path := m.file.Module.Mod.Path
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	for _, r := range m.file.Require {
		if ours[r.Mod.Path] {
			if err := m.file.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
	}
	if len(m.file.Replace) > 0 {
		return fmt.Errorf("go.mod has a replace directive, which go install ...@version refuses")
	}
	gomod, err := m.file.Format()
	if err != nil {
		return err
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files, err := gitFiles(m.dir, gomod)
	if err != nil {
		return err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, mv, files); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t})
	if err != nil {
		return err
	}
	for ext, data := range map[string][]byte{".info": info, ".mod": gomod, ".zip": zip.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, version+ext), data, 0o644); err != nil {
			return err
		}
	}
	return appendLine(filepath.Join(dir, "list"), version)
}

// gitFiles lists the module's files as git sees them in the working tree,
// with gomod as its go.mod. Files of modules below it are in the list too;
// modzip.Create omits them, as it omits vendored and irregular files.
func gitFiles(dir string, gomod []byte) ([]modzip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	listed, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []modzip.File
	for _, name := range strings.Split(string(listed), "\x00") {
		if name == "" {
			continue
		}
		if name == "go.mod" {
			files = append(files, dataFile{name: name, data: gomod})
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(name))
		st, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree, not yet in git
		}
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{name: name, path: full, info: st})
	}
	return files, nil
}

func appendLine(path, line string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, l := range strings.Split(string(old), "\n") {
		if l == line {
			return nil
		}
	}
	return os.WriteFile(path, append(old, line+"\n"...), 0o644)
}

// diskFile is a file of the working tree.
type diskFile struct {
	name, path string
	info       fs.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

// dataFile is the go.mod rewritten for the proxy.
type dataFile struct {
	name string
	data []byte
}

func (f dataFile) Path() string                 { return f.name }
func (f dataFile) Lstat() (fs.FileInfo, error)  { return dataInfo(f), nil }
func (f dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(f.data)), nil }

type dataInfo dataFile

func (fi dataInfo) Name() string       { return filepath.Base(fi.name) }
func (fi dataInfo) Size() int64        { return int64(len(fi.data)) }
func (fi dataInfo) Mode() fs.FileMode  { return 0o644 }
func (fi dataInfo) ModTime() time.Time { return time.Time{} }
func (fi dataInfo) IsDir() bool        { return false }
func (fi dataInfo) Sys() any           { return nil }
