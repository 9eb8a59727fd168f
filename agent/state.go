package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/state"
)

// The storage-state tools: browser_state_save writes the session's login
// (cookies, local and session storage) to a file, browser_state_load
// loads one into the session. The files live in the one directory the
// operator named (WithStateDir, hybroute mcp --state-dir), by a plain name:
// a model never names a path, and never reads a cookie, which stays in the
// file.

// Tool names of the storage-state tools.
const (
	ToolStateSave = "browser_state_save"
	ToolStateLoad = "browser_state_load"
)

// WithStateDir lets browser_state_save and browser_state_load keep state
// files in dir, each by a plain name (NAME.json): no path, no "..", no
// symbolic link. Without it, or with "", both tools answer that they are
// off. The files hold credentials: they are written 0600.
func WithStateDir(dir string) Option { return func(c *config) { c.stateDir = dir } }

const stateSchema = `{"type":"object","properties":{"name":{"type":"string","description":"Letters, digits, . _ -, e.g. github-login"}},"required":["name"]}`

var stateTools = []toolDef{
	{
		name:   ToolStateSave,
		desc:   "Save this session's cookies and storage under a name, for browser_state_load (values are never shown).",
		schema: stateSchema,
		run:    (*Toolset).stateSave,
	},
	{
		name:   ToolStateLoad,
		desc:   "Load a state saved by browser_state_save into this session; then navigate to the site, logged in. Local hosts' cookies never go to the cloud.",
		schema: stateSchema,
		run:    (*Toolset).stateLoad,
	},
}

// stateName is what a state's name may be: one plain file name.
var stateName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// statePath is the file of the state called name, in the state directory,
// or an error the model can act on.
func (t *Toolset) statePath(args json.RawMessage) (string, string, error) {
	var a struct {
		Name string `json:"name"`
	}
	if err := decode(args, &a); err != nil {
		return "", "", err
	}
	if t.cfg.stateDir == "" {
		return "", "", modeltext.Errorf("state files are off: the operator has not named a state directory (hybroute mcp --state-dir)")
	}
	name := strings.TrimSuffix(strings.TrimSpace(a.Name), ".json")
	if !stateName.MatchString(name) || strings.Contains(name, "..") {
		return "", "", modeltext.Errorf("invalid state name %s: use letters, digits, '.', '_' and '-' (up to 64), e.g. github-login; not a path", modeltext.Quote(a.Name, 80))
	}
	path := filepath.Join(t.cfg.stateDir, name+".json")
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return "", "", modeltext.Errorf("state %s is a symbolic link, which the state tools never follow", modeltext.Quote(name, 80))
	}
	return path, name, nil
}

func (t *Toolset) stateSave(ctx context.Context, _ *session, key string, args json.RawMessage) Result {
	path, name, err := t.statePath(args)
	if err != nil {
		return argError(err)
	}
	st, err := t.r.SaveState(ctx, key)
	if errors.Is(err, hybroute.ErrNoSession) {
		return toolError("this session has no browser yet: open a page with browser_navigate first")
	}
	if errors.Is(err, hybroute.ErrReleased) {
		return toolError(describe(err, nil, key))
	}
	if err != nil {
		return toolError("saving the state failed: " + scrubKey(innermost(err), key))
	}
	if err := state.WriteFile(path, t.scrubState(st)); err != nil {
		return toolError("writing the state " + modeltext.Quote(name, 80) + " failed: " + pathFree(err))
	}
	return Result{Text: fmt.Sprintf("Saved this session's state as %s: %d cookies, %d origins with storage.", modeltext.Quote(name, 80), len(st.Cookies), len(st.Origins))}
}

func (t *Toolset) stateLoad(ctx context.Context, _ *session, key string, args json.RawMessage) Result {
	path, name, err := t.statePath(args)
	if err != nil {
		return argError(err)
	}
	b, err := readLimited(path)
	if errors.Is(err, fs.ErrNotExist) {
		return toolError("there is no state " + modeltext.Quote(name, 80) + ": save one with browser_state_save")
	}
	if err != nil {
		return toolError("reading the state " + modeltext.Quote(name, 80) + " failed: " + pathFree(err))
	}
	st, err := state.Parse(b) // its errors name no path and no value
	if err != nil {
		return toolError("the state " + modeltext.Quote(name, 80) + " cannot be loaded: " + err.Error())
	}
	if err := t.r.LoadState(ctx, key, st); errors.Is(err, hybroute.ErrReleased) {
		return toolError(describe(err, nil, key))
	} else if err != nil {
		return toolError("loading the state failed: " + scrubKey(innermost(err), key))
	}
	return Result{Text: fmt.Sprintf("Loaded the state %s into this session: %d cookies, %d origins with storage. Open the site with browser_navigate.",
		modeltext.Quote(name, 80), len(st.Cookies), len(st.Origins))}
}

// maxStateFile bounds what is read of a state file; state.Parse refuses
// what is larger.
const maxStateFile = 16<<20 + 1

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxStateFile))
}

// pathFree is err's text without the state directory's path, which is the
// operator's, not the model's.
func pathFree(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}
