package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
	"github.com/hybroute/hybroute/route"
)

// ToolFileUpload is the name of the upload tool.
const ToolFileUpload = "browser_file_upload"

// maxUploadFiles bounds the files of one upload.
const maxUploadFiles = 20

// WithUploadDir lets browser_file_upload give the page files under dir,
// and nothing else: a path that leads outside it, through ".." or a
// symbolic link, is refused. Without it, browser_file_upload refuses every
// file. Files are uploaded by the local browser only: a cloud browser
// cannot read this machine's files.
func WithUploadDir(dir string) Option { return func(c *config) { c.uploadDir = dir } }

var uploadTools = []toolDef{
	{
		name:   ToolFileUpload,
		desc:   "Set a file input's files by ref (a button in the snapshot); paths under the upload directory, [] clears. Local browser only.",
		schema: fmt.Sprintf(`{"type":"object","properties":{"ref":{"type":"string"},"paths":{"type":"array","items":{"type":"string"},"maxItems":%d,"description":"e.g. report.pdf"}},"required":["ref","paths"]}`, maxUploadFiles),
		run:    (*Toolset).fileUpload,
	},
}

func (t *Toolset) fileUpload(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Ref   string   `json:"ref"`
		Paths []string `json:"paths"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if len(a.Paths) > maxUploadFiles {
		return toolError(fmt.Sprintf("%d files: upload at most %d in one call", len(a.Paths), maxUploadFiles))
	}
	files, err := uploadPaths(t.cfg.uploadDir, a.Paths)
	if err != nil {
		return argError(err)
	}
	var what string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		if c.h.Route() != route.Local {
			return modeltext.Errorf("the session's page is in the cloud browser, which cannot read this machine's files; files are uploaded into pages of the local browser only")
		}
		e, err := s.refs.Resolve(ctx, a.Ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(a.Ref, e)
		var ans fieldAnswer
		if err := callOnNode(e.In(ctx), a.Ref, e.Node(), fileInputJS, &ans, len(files)); err != nil {
			return err
		}
		if err := ans.err(a.Ref); err != nil {
			return err
		}
		return settled(ctx, c, &navigated, func() error {
			if _, err := chromedp.Call(e.In(ctx), dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: files, BackendNodeID: e.Node()}); err != nil {
				return snapshot.StaleNode(a.Ref, err)
			}
			return nil
		})
	})
	return t.finishCall(s, key, res, c, err, func() string {
		if len(files) == 0 {
			return "Cleared the files of " + what + "." + navNote(navigated)
		}
		names := make([]string, len(a.Paths))
		for i, p := range a.Paths {
			names[i] = modeltext.Quote(p, 200)
		}
		return fmt.Sprintf("Chose %d file(s) for %s: %s.", len(files), what, strings.Join(names, ", ")) + navNote(navigated)
	})
}

// fileInputJS checks that the node is a file input that takes n files.
const fileInputJS = `function(n) {
	if (!(this instanceof HTMLInputElement) || this.type !== "file") return {error: "is not a file input (<input type=file>); use the ref of the file input's button, whose value is the files chosen or \"No file chosen\""};
	if (this.disabled) return {error: "is disabled"};
	if (n > 1 && !this.multiple) return {error: "takes one file, not " + n};
	return {};
}`

// uploadPaths resolves the model's paths under dir: each must name a
// regular file inside dir once every symbolic link is followed. The
// browser is given the resolved path, with no link left in it to follow.
func uploadPaths(dir string, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return []string{}, nil
	}
	if dir == "" {
		return nil, modeltext.Errorf("file upload is off: the operator allowed no upload directory (--upload-dir), so no file can be uploaded")
	}
	root, err := filepath.Abs(dir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, modeltext.Errorf("the upload directory is not available: %v", pathErr(err))
	}
	abs, _ := filepath.Abs(dir)
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if strings.TrimSpace(p) == "" {
			return nil, modeltext.Errorf("an empty path: name a file under the upload directory")
		}
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(root, p)
		}
		// Every path that does not end at a regular file inside the
		// directory gets one and the same refusal, so the answer tells
		// nothing of what is there: /etc/shadow and /nonexistent, and
		// share/etc/shadow and share/etc/nonexistent through a link to /
		// inside the directory, read alike. A path outside by its spelling
		// is refused before the file system is asked anything.
		refused := modeltext.Errorf("%s is no file under the upload directory (a path outside the upload directory, a missing file and a directory are refused alike); only files under it can be uploaded", modeltext.Quote(p, 200))
		if !under(root, full) && !under(abs, full) {
			return nil, refused
		}
		real, err := filepath.EvalSymlinks(full)
		if err != nil || !under(root, real) {
			return nil, refused
		}
		fi, err := os.Stat(real)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, refused
		}
		out = append(out, real)
	}
	return out, nil
}

// under reports whether the clean path p is inside dir (or dir itself).
func under(dir, p string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// pathErr is a file error without the path, which the model wrote itself
// or must not learn (the directory's place on this machine).
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
