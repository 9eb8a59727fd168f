// Package cdpcompat knows where the DevTools protocol of the Chromium majors
// hybroute supports differs, and picks for each browser connection what
// works there. Every choice it offers gives the same guarantee as the newest
// shape; where a browser has no such mechanism, it says so and the caller
// refuses the browser rather than use it unguarded.
package cdpcompat

import (
	"errors"

	"github.com/chromedp/cdproto"
	"strconv"
	"strings"
)

// MinMajor is the oldest Chromium major hybroute supports: two years of
// majors below the newest it is tested on.
const MinMajor = 131

// Browser is what Browser.getVersion says of a browser.
type Browser struct {
	// Product is the product string as the browser gives it, e.g.
	// "HeadlessChrome/148.0.7778.0" or "Chrome/156.0.8078.114".
	Product string
	// Major is the product's major version; 0 when it names none.
	Major int
}

// ParseProduct reads a Browser.getVersion product string. A product that
// names no version ("Lightpanda/1.0" is not Chromium, a fork may say
// anything) has Major 0: its capabilities are found by asking the protocol.
func ParseProduct(product string) Browser {
	b := Browser{Product: product}
	_, ver, ok := strings.Cut(product, "/")
	if !ok {
		return b
	}
	major, _, _ := strings.Cut(ver, ".")
	if n, err := strconv.Atoi(major); err == nil && n > 0 && n < 10000 {
		b.Major = n
	}
	return b
}

// String names the browser in messages: its product string, bounded, or
// "an unnamed browser".
func (b Browser) String() string {
	p := b.Product
	if p == "" {
		return "an unnamed browser"
	}
	if len(p) > 64 {
		p = p[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, p)
}

// BelowFloor reports whether the browser names a major older than MinMajor.
func (b Browser) BelowFloor() bool { return b.Major != 0 && b.Major < MinMajor }

// IsShapeError reports whether err is the browser's answer that it lacks a
// method or takes other parameters: the answer that makes the next older
// shape worth a try. Any other error (a closed connection, a detached
// target, a deadline) says nothing about the protocol.
func IsShapeError(err error) bool {
	var ce *cdproto.Error
	return errors.As(err, &ce) && (ce.Code == -32601 || ce.Code == -32602)
}
