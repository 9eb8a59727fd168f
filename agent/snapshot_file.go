package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// WithSnapshotDir lets browser_snapshot write snapshots to files in dir
// (its file argument), for a model that reads them in parts with tools of
// its own. Without it, a snapshot to a file is refused. Only plain file
// names are taken, written through an os.Root of dir, so nothing outside
// dir is written, through ".." or a symbolic link alike.
func WithSnapshotDir(dir string) Option { return func(c *config) { c.snapshotDir = dir } }

// checkSnapshotFile refuses a file name before the call reaches a browser.
func (t *Toolset) checkSnapshotFile(name string) error {
	if t.cfg.snapshotDir == "" {
		return modeltext.Errorf("cannot write a snapshot to a file: the operator allowed no directory for them (hybroute mcp --snapshot-dir, agent.WithSnapshotDir); take the snapshot without file, or shape it with depth, ref or find")
	}
	if name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return modeltext.Errorf("file %q: give a plain file name such as page.txt, without directories; it is written in the directory the operator allows", name)
	}
	return nil
}

// writeSnapshotFile writes text to name in the snapshot directory and
// returns what the model reads instead of the text.
func (t *Toolset) writeSnapshotFile(name, text string) (string, error) {
	root, err := os.OpenRoot(t.cfg.snapshotDir)
	if err != nil {
		return "", fmt.Errorf("opening the snapshot directory: %w", err)
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", modeltext.Errorf("cannot write %s: %v", modeltext.Quote(name, 200), err)
	}
	text = t.cfg.secrets.Scrub(text)
	if _, err := f.WriteString(text + "\n"); err != nil {
		f.Close()
		return "", fmt.Errorf("writing the snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing the snapshot: %w", err)
	}
	return fmt.Sprintf("Wrote the snapshot (%d lines, %d bytes) to %s.", strings.Count(text, "\n")+1, len(text)+1, filepath.Join(t.cfg.snapshotDir, name)), nil
}
