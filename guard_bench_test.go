package hybroute

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/internal/cloudtest"
	"github.com/hybroute/hybroute/internal/config"
	"github.com/hybroute/hybroute/internal/floor"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/route"
)

// BenchmarkGuardCost measures what the guard on every target costs a page
// load and a popup on a remote browser, with the guard off and on, in one
// process against one Chromium. "page" is a document with five images;
// "popup" is a page opening a same-origin popup and waiting for its load
// (the popup is auto-attached paused, set up and resumed).
func BenchmarkGuardCost(b *testing.B) {
	requireChromium(b)
	s := newSite(b, func(mux *http.ServeMux, s *site) {
		mux.HandleFunc("/bench-page", func(w http.ResponseWriter, r *http.Request) {
			var srcs []string
			for i := range 5 {
				srcs = append(srcs, fmt.Sprintf("/img%d?%s", i, r.URL.RawQuery))
			}
			servePage(w, "images", imagesPage{"bench", srcs})
		})
	})
	cloud := cloudtest.LaunchChromium(b)
	cfg := config.Default()
	cfg.AllowPrivate = true
	cfg.CloudWebRTC = true // window.open hands the popup back only with WebRTC on (internal/guard/webrtc.go)
	cfg.Resolver = testResolver
	pol := newPolicy(&cfg, false, nil)
	for _, mode := range []string{"off", "on"} {
		var g *guard.Guard
		if mode == "on" {
			g = floor.NewGuard(pol, nil, route.Cloud)
		}
		ctx := testCtx(b)
		rt, err := connectRemote(ctx, cloud.WSURL, "the benchmark browser", g)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		b.Run("page/guard-"+mode, func(b *testing.B) {
			for b.Loop() {
				n++
				if err := chromedp.Do(rt.Conn(), chromedp.Navigate(fmt.Sprintf("%s/bench-page?%d", s.URL, n))); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("popup/guard-"+mode, func(b *testing.B) {
			if err := chromedp.Do(rt.Conn(), chromedp.Navigate(s.URL+"/opener")); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				_, err := chromedp.Run(rt.Conn(), chromedp.Evaluate[string](`new Promise(r => {
					const w = window.open("/popup-page");
					w.addEventListener("load", () => { w.close(); r("loaded"); });
				})`, chromedp.EvalAwaitPromise, asUserGesture))
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = rt.Close(context.Background())
	}
}

// imagesPage fills testdata/pages/images.html: a page titled Title with
// an image of each of Srcs.
type imagesPage struct {
	Title string
	Srcs  []string
}

// BenchmarkGuardRTT measures what pausing every request of a remote
// browser costs a page load when the browser is far away: a page of 100
// images over 20 hosts, loaded through a link that adds a delay in each
// direction (cloudtest.DelayProxy). Over one connection to one Chromium:
// "guard-off" is bare chromedp, "guard-on" the same with the remote guard
// (every request paused and decided), "router" a whole Router.Navigate
// (the guard plus the router's own round trips: the landed-URL check, the
// tab probe). The origins answer at once from loopback, so the page's own
// load time is near nothing and the figures show the guard's round trips at
// their largest share.
//
// Over HTTP/1.1 the browser starts at most about ten images at a time, and a
// paused request holds its slot for the round trip to the router: the
// images go in waves, each a round trip longer. Over HTTP/2, as most pages
// with a hundred subresources are served, they start together, and the
// pauses overlap.
func BenchmarkGuardRTT(b *testing.B) {
	requireChromium(b)
	const hosts, perHost = 20, 5
	mux := http.NewServeMux()
	mux.HandleFunc("/hundred", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		_, port, _ := net.SplitHostPort(r.Host)
		var srcs []string
		for h := range hosts {
			for i := range perHost {
				srcs = append(srcs, fmt.Sprintf("//b%d.bench.test:%s/px%d.gif?%s", h, port, i, r.URL.RawQuery))
			}
		}
		servePage(w, "images", imagesPage{"hundred", srcs})
	})
	for i := range perHost {
		mux.HandleFunc(fmt.Sprintf("/px%d.gif", i), pixel)
	}
	h1 := httptest.NewServer(mux)
	b.Cleanup(h1.Close)
	h2 := httptest.NewUnstartedServer(mux)
	h2.EnableHTTP2 = true
	h2.StartTLS()
	b.Cleanup(h2.Close)

	rules := []string{"MAP " + publicHost + " 127.0.0.1"}
	res := testResolverWith(publicHost, "93.184.215.14")
	for h := range hosts {
		n := fmt.Sprintf("b%d.bench.test", h)
		rules = append(rules, "MAP "+n+" 127.0.0.1")
		res[n] = addrs("93.184.215.14")
	}
	// The test certificate names no bench host; a provider's browser
	// would meet real ones.
	cloud := cloudtest.LaunchChromium(b, "--host-resolver-rules="+strings.Join(rules, ", "), "--ignore-certificate-errors")
	u, err := url.Parse(cloud.WSURL)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Resolver = res
	pol := newPolicy(&cfg, false, nil)
	n := 0
	for _, proto := range []struct {
		name string
		srv  *httptest.Server
	}{{"http1", h1}, {"http2", h2}} {
		origin, _ := url.Parse(proto.srv.URL)
		_, port, _ := net.SplitHostPort(origin.Host)
		page := func() string {
			n++
			return fmt.Sprintf("%s://%s/hundred?%d", origin.Scheme, net.JoinHostPort(publicHost, port), n)
		}
		for _, oneWay := range []time.Duration{0, 25 * time.Millisecond, 50 * time.Millisecond} {
			far := *u
			far.Host = cloudtest.DelayProxy(b, u.Host, oneWay)
			for _, mode := range []string{"off", "on"} {
				b.Run(fmt.Sprintf("%s/delay=%v/guard-%s", proto.name, oneWay, mode), func(b *testing.B) {
					var g *guard.Guard
					if mode == "on" {
						g = floor.NewGuard(pol, nil, route.Cloud)
					}
					rt, err := connectRemote(testCtx(b), far.String(), "the benchmark browser", g)
					if err != nil {
						b.Fatal(err)
					}
					defer func() { _ = rt.Close(context.Background()) }()
					if err := chromedp.Do(rt.Conn(), chromedp.Navigate(page())); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if err := chromedp.Do(rt.Conn(), chromedp.Navigate(page())); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
			b.Run(fmt.Sprintf("%s/delay=%v/router", proto.name, oneWay), func(b *testing.B) {
				r, err := New(nil, WithCDPURL(far.String()), WithResolver(res))
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				ctx := testCtx(b)
				if _, err := r.Navigate(ctx, "bench", page(), nil); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := r.Navigate(ctx, "bench", page(), nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// pixel serves a one-pixel GIF that is never cached.
func pixel(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "image/gif")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"))
}
