package agent

import (
	"context"
	"encoding/json"

	"github.com/hybroute/hybroute/route"
)

// Downloads: the engine is agent/internal/download; here are the tool,
// the options, and the hook that attaches a session's downloads to each
// call on a CDP tab.

// ToolDownloads lists the session's downloads.
const ToolDownloads = "browser_downloads"

var downloadTools = []toolDef{
	{
		name:   ToolDownloads,
		desc:   "This session's downloads: name, size, type, path, or why refused or unfinished.",
		schema: noArgs,
		run:    (*Toolset).downloadsTool,
	},
}

// DefaultMaxDownloadBytes bounds one saved file (downloads and PDFs).
const DefaultMaxDownloadBytes = 100 << 20

// The defaults of a session's download bounds ([DownloadLimits]), for a
// small machine: a couple of cores, a disk of a few GiB shared by the
// sessions. A model that clicks download links one call at a time stays
// well within them; a page that starts downloads on a timer does not.
const (
	DefaultSessionDownloadBytes = 100 << 20
	DefaultSessionDownloadFiles = 20
	DefaultDownloadsPerMinute   = 10
)

// DownloadLimits bound one session's downloads together. A page past one
// is cut off: the download that passed it is cancelled (its part
// removed), the browser refuses every later download of the session, and
// the next tool result says so. A zero field keeps its default; a
// negative one removes the bound.
type DownloadLimits struct {
	Bytes     int64 // the bytes of the session's downloads together (default 100 MiB)
	Files     int   // how many downloads the session may start (default 20)
	PerMinute int   // how many it may start within any minute (default 10)
}

// WithDownloadLimits sets the bounds of each session's downloads
// together (defaults: 100 MiB, 20 files, 10 a minute); [WithMaxDownloadBytes]
// bounds one file.
func WithDownloadLimits(l DownloadLimits) Option {
	return func(c *config) {
		if l.Bytes != 0 {
			c.dlLimits.Bytes = l.Bytes
		}
		if l.Files != 0 {
			c.dlLimits.Files = l.Files
		}
		if l.PerMinute != 0 {
			c.dlLimits.PerMinute = l.PerMinute
		}
	}
}

// WithKeepDownloads keeps a session's downloaded files in the download
// directory when the session ends (browser_close, Release, Close).
// Without it they are removed then, so what pages left on the disk goes
// with them; PDFs browser_pdf_save wrote stay either way.
func WithKeepDownloads(keep bool) Option { return func(c *config) { c.keepDownloads = keep } }

// WithDownloadDir lets the local browser save downloads, and
// browser_pdf_save write PDFs, under dir. Without it, downloads are
// denied (the result says so) and browser_pdf_save is an error. dir must
// exist; files are created inside it only, under cleaned names, never
// replacing a file.
func WithDownloadDir(dir string) Option { return func(c *config) { c.downloadDir = dir } }

// WithMaxDownloadBytes bounds one saved file (default 100 MiB): a download
// past it is cancelled and its part removed, a PDF past it is not written.
func WithMaxDownloadBytes(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxDownload = n
		}
	}
}

// denyReason is why a tab's downloads are denied, "" when they are saved.
func (t *Toolset) denyReason(c *call) string {
	if t.cfg.downloadDir == "" {
		return "downloads are off: the operator set no download directory (hybroute mcp --download-dir), so the browser refused the file"
	}
	if c.h.Route() != route.Local {
		return "the page is in the cloud browser, which runs on the provider's machine: downloads are saved from the local browser only, so it refused the file"
	}
	return ""
}

// downloadHook attaches the session's downloads to a call: the tab's
// download behavior and listeners before the body runs, and after it, the
// wait for the downloads it started and their report in the result.
type downloadHook struct{ t *Toolset }

func (downloadHook) watches() string { return "downloads" }

func (h downloadHook) before(ctx context.Context, s *session, c *call) (func(error) error, error) {
	// The tab's downloads are set up before the mark: a download of this
	// call is after it.
	err := s.dl.Watch(ctx, c.target, h.t.denyReason(c))
	m := s.dl.Mark()
	return func(runErr error) error {
		out, err := s.dl.Settle(ctx, c.target, m, runErr)
		c.downloads, c.downloadNav = out.Report, out.Nav
		return err
	}, err
}

func (t *Toolset) downloadsTool(_ context.Context, s *session, _ string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	return Result{Text: s.dl.Listing()}
}
