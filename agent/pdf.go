package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chromedp/cdproto/io"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/download"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
)

// browser_pdf_save prints the page (Page.printToPDF) and writes the PDF
// in the download directory. The PDF comes back over CDP as a stream read
// in chunks, so it works on a cloud browser as on the local one, as long
// as the browser is headless (a headed Chromium does not print to PDF, and
// the result says what the browser answered); the file is written on this
// machine either way. A REST-driven cloud browser (Camofox) cannot print.

// ToolPDFSave saves the page as a PDF file.
const ToolPDFSave = "browser_pdf_save"

var pdfTools = []toolDef{
	{
		name:   ToolPDFSave,
		desc:   "Save the page as a PDF in the download directory.",
		schema: pdfSchema,
		run:    (*Toolset).pdfSave,
	},
}

const pdfSchema = `{"type":"object","properties":{"filename":{"type":"string","description":"Default: from the title"},"landscape":{"type":"boolean","default":false},"print_background":{"type":"boolean","default":false}}}`

// pdfChunk is how much of the PDF one IO.read asks for: the browser
// connection's read buffer keeps the size of its largest message.
const pdfChunk = 1 << 20

func (t *Toolset) pdfSave(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Filename        string `json:"filename"`
		Landscape       bool   `json:"landscape"`
		PrintBackground bool   `json:"print_background"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if t.cfg.downloadDir == "" {
		return toolError("browser_pdf_save needs a download directory, and the operator set none (hybroute mcp --download-dir). Nothing was printed.")
	}
	var path string
	var n int64
	res, c, err := t.do(ctx, s, key, "", reads|drivesREST, func(ctx context.Context, c *call) error {
		if c.rest != nil {
			return modeltext.Errorf("this session's browser is a cloud browser driven through its REST API, without CDP, and it cannot print the page to PDF; browser_screenshot works on it")
		}
		if err := s.secrets.refuseImage(ctx, s, c, ToolPDFSave); err != nil {
			return err
		}
		name := a.Filename
		if strings.TrimSpace(name) == "" {
			name = c.title
			if strings.TrimSpace(name) == "" {
				name = "page"
			}
		}
		name = download.CleanName(name, "")
		if !strings.EqualFold(filepath.Ext(name), ".pdf") {
			name += ".pdf"
		}
		var err error
		path, n, err = t.printPDF(ctx, name, a.Landscape, a.PrintBackground)
		return err
	})
	return t.finishCall(s, key, res, c, err, func() string {
		return fmt.Sprintf("Saved the page as PDF: %s (%s).", path, modeltext.Size(n))
	})
}

// printPDF prints the page and writes the PDF as name in the download
// directory, never over another file and never past the size bound.
func (t *Toolset) printPDF(ctx context.Context, name string, landscape, background bool) (string, int64, error) {
	r, err := chromedp.Call(ctx, page.PrintToPDF, page.PrintToPDFParams{
		Landscape: new(landscape), PrintBackground: new(background), TransferMode: page.PrintToPDFTransferModeReturnAsStream})
	if err != nil {
		if strings.Contains(err.Error(), "not implemented") {
			return "", 0, modeltext.Errorf("this browser cannot print to PDF (it answered %q): only a headless browser prints", innermost(err))
		}
		return "", 0, err
	}
	if r.Stream == "" {
		return "", 0, errors.New("the browser returned no PDF stream")
	}
	defer func() { _, _ = chromedp.Call(ctx, io.Close, io.CloseParams{Handle: r.Stream}) }()
	path, err := download.Reserve(t.cfg.downloadDir, name)
	if err != nil {
		return "", 0, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		_ = os.Remove(path)
		return "", 0, err
	}
	var n int64
	werr := func() error {
		for {
			chunk, err := chromedp.Call(ctx, io.Read, io.ReadParams{Handle: r.Stream, Size: pdfChunk})
			if err != nil {
				return err
			}
			n += int64(len(chunk.Data))
			if n > t.cfg.maxDownload {
				return modeltext.Errorf("the PDF is larger than the %s a saved file may be, so it was not written; print part of the page another way", modeltext.Size(t.cfg.maxDownload))
			}
			if _, err := f.Write(chunk.Data); err != nil {
				return err
			}
			if chunk.EOF {
				return nil
			}
		}
	}()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return "", 0, werr
	}
	return path, n, nil
}
