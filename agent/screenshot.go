package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
	"github.com/hybroute/hybroute/internal/browsertab"
)

const ToolScreenshot = "browser_screenshot"

var screenshotTools = []toolDef{
	{
		name: ToolScreenshot,
		desc: "Screenshot of the viewport, the whole page (full_page) or one element (ref); png, or jpeg with quality; max_width/max_height scale it down. " +
			"To read text or find elements, use browser_snapshot.",
		schema: screenshotSchema,
		run:    (*Toolset).screenshot,
	},
}

const screenshotSchema = `{"type":"object","properties":{` +
	`"full_page":{"type":"boolean"},"ref":{"type":"string"},"element":{"type":"string","description":"For the log"},` +
	`"format":{"type":"string","enum":["png","jpeg"],"default":"png"},` +
	`"quality":{"type":"integer","minimum":1,"maximum":100,"default":80},` +
	`"max_width":{"type":"integer","minimum":16},"max_height":{"type":"integer","minimum":16}}}`

// shotArgs are browser_screenshot's arguments.
type shotArgs struct {
	FullPage  bool   `json:"full_page"`
	Ref       string `json:"ref"`
	Element   string `json:"element"`
	Format    string `json:"format"`
	Quality   *int   `json:"quality"`
	MaxWidth  int    `json:"max_width"`
	MaxHeight int    `json:"max_height"`
}

// Defaults and bounds of a screenshot's shape.
const (
	defaultJPEGQuality = 80
	minShotSide        = 16
)

func (a *shotArgs) check() error {
	a.Format = strings.ToLower(strings.TrimSpace(a.Format))
	switch a.Format {
	case "", "png":
		a.Format = "png"
		if a.Quality != nil {
			return modeltext.Errorf("quality applies to format jpeg only; set format to jpeg or leave quality out")
		}
	case "jpeg", "jpg":
		a.Format = "jpeg"
		if a.Quality != nil && (*a.Quality < 1 || *a.Quality > 100) {
			return modeltext.Errorf("quality %d: use a number from 1 to 100", *a.Quality)
		}
	default:
		return modeltext.Errorf("format %q: use png or jpeg", a.Format)
	}
	if a.Ref != "" && a.FullPage {
		return modeltext.Errorf("give either ref (one element) or full_page, not both")
	}
	for _, m := range [...]struct {
		name string
		v    int
	}{{"max_width", a.MaxWidth}, {"max_height", a.MaxHeight}} {
		if m.v != 0 && m.v < minShotSide {
			return modeltext.Errorf("%s %d: use at least %d pixels, or leave it out", m.name, m.v, minShotSide)
		}
	}
	return nil
}

func (a *shotArgs) quality() int {
	if a.Quality != nil {
		return *a.Quality
	}
	return defaultJPEGQuality
}

// fitScale is the scale that fits w×h within the maxima (never above 1).
func (a *shotArgs) fitScale(w, h float64) float64 {
	s := 1.0
	if a.MaxWidth > 0 && w > 0 {
		s = min(s, float64(a.MaxWidth)/w)
	}
	if a.MaxHeight > 0 && h > 0 {
		s = min(s, float64(a.MaxHeight)/h)
	}
	return s
}

func (t *Toolset) screenshot(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a shotArgs
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if err := a.check(); err != nil {
		return argError(err)
	}
	var img Image
	var what string
	res, c, err := t.do(ctx, s, key, "", reads|light|drivesREST, func(ctx context.Context, c *call) error {
		if p := c.rest; p != nil {
			if a.Ref != "" {
				return modeltext.Errorf("this session's browser is driven through a REST API, which takes screenshots of the page only: leave ref out")
			}
			data, err := p.Screenshot(ctx, a.FullPage)
			if err != nil {
				return readErr(err)
			}
			img, err = fitImage(data, &a)
			what = "the visible part of the page"
			if a.FullPage {
				what = "the whole page"
			}
			return err
		}
		// Only a CDP tab can hold a typed secret (browser_type_secret).
		if err := s.secrets.refuseImage(ctx, s, c, ToolScreenshot); err != nil {
			return err
		}
		var err error
		img, what, err = t.captureCDP(ctx, s, c, &a)
		return err
	})
	r := t.finishCall(s, key, res, c, err, func() string {
		return fmt.Sprintf("Screenshot of %s: %dx%d %s.", what, img.Width, img.Height, strings.ToUpper(a.Format))
	})
	if !r.IsError {
		r.Images = []Image{img}
	}
	return r
}

// captureCDP takes the screenshot on a CDP tab. The browser scales the
// image (the clip's scale) and encodes it; the image is checked after, and
// scaled here if it still exceeds the maxima (a device pixel ratio above 1).
func (t *Toolset) captureCDP(ctx context.Context, s *session, c *call, a *shotArgs) (Image, string, error) {
	// The where-line's URL and title are read while the browser captures,
	// not in a round trip before it (the page's URL was checked where the
	// Router tracks it: light).
	info := make(chan struct{})
	go func() {
		defer close(info)
		c.url, c.title, _ = pageInfo(ctx)
	}()
	defer func() { <-info }()
	// Encoding for speed makes a PNG larger (about twice, on a plain
	// page) and the capture about a fifth faster; a model's image budget
	// counts pixels, not bytes.
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng, OptimizeForSpeed: new(true)}
	if a.Format == "jpeg" {
		p.Format = page.CaptureScreenshotFormatJpeg
		p.Quality = new(int64(a.quality()))
	}
	what := "the visible part of the page"
	scaled := a.MaxWidth > 0 || a.MaxHeight > 0
	switch {
	case a.Ref != "":
		e, err := s.refs.Resolve(ctx, a.Ref, c.target)
		if err != nil {
			return Image{}, "", err
		}
		what = describeRef(a.Ref, e)
		if e.CrossSite() {
			// Its box is in the frame's own coordinates, not the page's.
			return Image{}, "", modeltext.Errorf("the element %s is in a frame of another site, which an element screenshot cannot clip; take a screenshot of the page", a.Ref)
		}
		clip, err := nodeClip(ctx, a.Ref, e.Node())
		if err != nil {
			return Image{}, "", err
		}
		p.Clip, p.CaptureBeyondViewport = clip, new(true)
	case a.FullPage || scaled:
		// A page that navigates itself can be between documents.
		var m page.GetLayoutMetricsResult
		err := browsertab.WhileAttaching(ctx, func() (err error) {
			m, err = chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
			return err
		})
		if err != nil {
			return Image{}, "", err
		}
		if a.FullPage {
			what = "the whole page"
			if cs := m.CSSContentSize; cs != nil && cs.Width > 0 && cs.Height > 0 {
				p.Clip = &page.Viewport{Width: cs.Width, Height: min(cs.Height, maxFullPageHeight), Scale: 1}
				p.CaptureBeyondViewport = new(true)
			}
		} else if v := m.CSSVisualViewport; v != nil && v.ClientWidth > 0 && v.ClientHeight > 0 {
			p.Clip = &page.Viewport{X: v.PageX, Y: v.PageY, Width: v.ClientWidth, Height: v.ClientHeight, Scale: 1}
		}
	}
	if p.Clip != nil {
		p.Clip.Scale = a.fitScale(p.Clip.Width, p.Clip.Height)
	}
	var shot page.CaptureScreenshotResult
	err := browsertab.WhileAttaching(ctx, func() (err error) {
		shot, err = chromedp.Call(ctx, page.CaptureScreenshot, p)
		return err
	})
	if err != nil {
		return Image{}, "", err
	}
	img, err := fitImage(shot.Data, a)
	return img, what, err
}

// maxFullPageHeight bounds a full-page screenshot (CSS pixels): an endless
// page must not make an image no model can take.
const maxFullPageHeight = 16384

// nodeClip is the element's border box in page coordinates, scrolled into
// view first (a box the layout has not placed has no size).
func nodeClip(ctx context.Context, ref string, node cdp.BackendNodeID) (*page.Viewport, error) {
	if _, err := chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: node}); err != nil {
		return nil, snapshot.StaleNode(ref, err)
	}
	box, err := chromedp.Call(ctx, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: node})
	if err != nil || box.Model == nil || len(box.Model.Border) < 8 {
		if err == nil {
			err = fmt.Errorf("no box")
		}
		return nil, snapshot.StaleNode(ref, err)
	}
	q := box.Model.Border
	x0, y0, x1, y1 := q[0], q[1], q[0], q[1]
	for i := 2; i < 8; i += 2 {
		x0, x1 = min(x0, q[i]), max(x1, q[i])
		y0, y1 = min(y0, q[i+1]), max(y1, q[i+1])
	}
	if x1-x0 < 1 || y1-y0 < 1 {
		return nil, modeltext.Errorf("the element %s has no visible area to capture (it is hidden or empty)", ref)
	}
	// The box is in the viewport's coordinates; the clip is in the page's.
	m, err := chromedp.Call(ctx, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	var px, py float64
	if v := m.CSSVisualViewport; v != nil {
		px, py = v.PageX, v.PageY
	}
	return &page.Viewport{X: x0 + px, Y: y0 + py, Width: x1 - x0, Height: min(y1-y0, maxFullPageHeight), Scale: 1}, nil
}

// fitImage reads the browser's image and, when it exceeds the maxima or
// is not in the asked format, scales and encodes it here.
func fitImage(data []byte, a *shotArgs) (Image, error) {
	cfg, kind, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("the browser's screenshot is not an image: %w", err)
	}
	s := a.fitScale(float64(cfg.Width), float64(cfg.Height))
	if s >= 1 && kind == a.Format {
		return Image{MIMEType: "image/" + kind, Data: data, Width: cfg.Width, Height: cfg.Height}, nil
	}
	src, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("the browser's screenshot is not an image: %w", err)
	}
	dst := src
	if s < 1 {
		// Rounded, then held to the maxima: 1280×(100/1280) is 99.99….
		w := max(1, int(math.Round(float64(cfg.Width)*s)))
		h := max(1, int(math.Round(float64(cfg.Height)*s)))
		if a.MaxWidth > 0 {
			w = min(w, a.MaxWidth)
		}
		if a.MaxHeight > 0 {
			h = min(h, a.MaxHeight)
		}
		dst = shrink(src, w, h)
	}
	var buf bytes.Buffer
	if a.Format == "jpeg" {
		err = jpeg.Encode(&buf, dst, &jpeg.Options{Quality: a.quality()})
	} else {
		err = png.Encode(&buf, dst)
	}
	if err != nil {
		return Image{}, fmt.Errorf("encoding the screenshot: %w", err)
	}
	b := dst.Bounds()
	return Image{MIMEType: "image/" + a.Format, Data: buf.Bytes(), Width: b.Dx(), Height: b.Dy()}, nil
}

// shrink scales src down to w×h by averaging the source pixels each
// destination pixel covers (a box filter: what a downscale needs).
func shrink(src image.Image, w, h int) *image.RGBA {
	sb := src.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	sw, sh := sb.Dx(), sb.Dy()
	for y := range h {
		y0, y1 := sb.Min.Y+y*sh/h, sb.Min.Y+max((y+1)*sh/h, y*sh/h+1)
		for x := range w {
			x0, x1 := sb.Min.X+x*sw/w, sb.Min.X+max((x+1)*sw/w, x*sw/w+1)
			var r, g, bl, al, n uint64
			for sy := y0; sy < y1; sy++ {
				for sx := x0; sx < x1; sx++ {
					cr, cg, cb, ca := src.At(sx, sy).RGBA()
					r, g, bl, al, n = r+uint64(cr), g+uint64(cg), bl+uint64(cb), al+uint64(ca), n+1
				}
			}
			i := dst.PixOffset(x, y)
			dst.Pix[i], dst.Pix[i+1], dst.Pix[i+2], dst.Pix[i+3] = uint8(r/n>>8), uint8(g/n>>8), uint8(bl/n>>8), uint8(al/n>>8)
		}
	}
	return dst
}
