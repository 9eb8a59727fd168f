// Package cdpconn connects chromedp to a browser's CDP websocket exactly as a
// cloud browser provider hands the URL out: wss://connect.example.com?key=K
// with no port and no /devtools/browser/ path, or ws(s)://host:port/devtools/
// browser/ID. The URL is dialled as given, over TLS when it says wss, with
// the caller's *http.Client, so the client that talks to a provider's API
// (its transport, proxy and trusted roots) also governs the websocket.
//
// It exists because chromedp's remote allocator, unless told otherwise,
// fetches http://HOST:PORT/json/version?<query> before it dials: a URL
// without a port fails, the key in the query travels in cleartext to a URL
// the provider never named, and an answer without webSocketDebuggerUrl
// panics in a goroutine. Here /json/version is fetched only by Discover, for
// an http(s) endpoint that documents it, and its answer is checked.
//
// No error of this package contains the URL's credentials, in any encoding.
package cdpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	jsonv2 "github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/hybroute/hybroute/internal/redact"
)

var (
	// ErrInvalidURL is matched by the error for a CDP URL that cannot be
	// used: unparseable, without a host, or with the wrong scheme.
	ErrInvalidURL = errors.New("cdpconn: unusable CDP URL")
	// ErrCleartext is matched by the error for a URL that would send
	// credentials (a query value or userinfo) unencrypted (ws:// or
	// http://) to a host that is not loopback.
	ErrCleartext = errors.New("cdpconn: refusing to send credentials unencrypted")
	// ErrDial is matched by the error of a websocket that could not be
	// opened: a network or TLS failure, a timeout, or an answer other than
	// 101 Switching Protocols.
	ErrDial = errors.New("cdpconn: opening the CDP websocket failed")
	// ErrDiscovery is matched by the error of a /json/version request that
	// gave no usable answer: a failed request, a status other than 2xx, a
	// body that is not JSON, or no webSocketDebuggerUrl in it.
	ErrDiscovery = errors.New("cdpconn: the /json/version answer gave no usable websocket URL")
	// ErrUntrustedURL is matched by the error for a webSocketDebuggerUrl
	// that points away from the endpoint: another host (not allowed), or
	// ws:// where the discovery ran over https.
	ErrUntrustedURL = errors.New("cdpconn: the discovered websocket URL is not the endpoint's")
	// ErrInvalidMessage is the error of a websocket message that is not a
	// text message: CDP sends JSON text only.
	ErrInvalidMessage = errors.New("cdpconn: the browser sent a non-text websocket message")
)

// MaxMessageSize is the largest CDP message a Conn reads. Chromium sends
// single messages of 100 MiB and more (screenshots, response bodies); the
// websocket library's default limit is 32 KiB, which would end the
// connection on the first screenshot. It is the limit chromedp's own client
// uses.
const MaxMessageSize = 256 << 20

// retainLimit is the largest read buffer a Conn keeps between messages, so
// one huge screenshot does not pin its memory for the life of the session.
const retainLimit = 4 << 20

// DefaultDialTimeout bounds the websocket handshake when neither the
// context nor the client's Timeout sets an earlier deadline.
const DefaultDialTimeout = 30 * time.Second

// Option configures Dial.
type Option func(*options)

type options struct {
	header      http.Header
	dialTimeout time.Duration
}

// WithHeader adds HTTP headers to the websocket handshake (an Authorization
// header, for a service that wants one). The header is copied.
func WithHeader(h http.Header) Option {
	return func(o *options) { o.header = h.Clone() }
}

// WithDialTimeout bounds the websocket handshake (default
// DefaultDialTimeout); zero or less leaves it to the context and the
// client's Timeout.
func WithDialTimeout(d time.Duration) Option {
	return func(o *options) { o.dialTimeout = d }
}

func newOptions(opts []Option) options {
	o := options{dialTimeout: DefaultDialTimeout}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Conn is a chromedp.Transport over a websocket to a browser.
type Conn struct {
	ws *websocket.Conn

	// Only the reader goroutine of the chromedp.Browser uses it.
	rbuf bytes.Buffer

	// encMu makes Write use the encoder and its buffer one call at a time.
	encMu   sync.Mutex
	encoder jsonv2.Encoder
	encBuf  bytes.Buffer

	debugf func(string, ...any)
}

var _ chromedp.Transport = (*Conn)(nil)

// Dial opens the CDP websocket at wsURL, exactly as given: a ws or wss URL,
// port and path optional, credentials in the query allowed. The handshake
// goes through client (nil means http.DefaultClient): its transport dials,
// and for wss its TLS configuration decides which certificates are trusted.
// The client's Timeout bounds the handshake only, never the connection
// (the copy Dial uses has Timeout 0), and redirects are refused, so the
// websocket is never opened anywhere but at wsURL.
//
// Credentials are never sent unencrypted: a ws:// URL with a query value or
// userinfo is refused (ErrCleartext) unless its host is loopback.
func Dial(ctx context.Context, wsURL string, client *http.Client, opts ...Option) (*Conn, error) {
	o := newOptions(opts)
	sec := redact.FromURL(wsURL)
	u, err := parseEndpoint(wsURL, "ws", "wss")
	if err != nil {
		return nil, fail(sec, ErrInvalidURL, "cdpconn: websocket URL "+redact.URL(wsURL), err)
	}
	if err := checkCleartext(u); err != nil {
		return nil, fail(sec, ErrCleartext, "cdpconn: websocket URL "+redact.URL(wsURL), err)
	}
	hc, timeout := handshakeClient(client)
	if o.dialTimeout > 0 && (timeout <= 0 || o.dialTimeout < timeout) {
		timeout = o.dialTimeout
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ws, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: o.header})
	if err != nil {
		msg := "cdpconn: opening the websocket " + redact.URL(wsURL)
		status := 0
		if resp != nil {
			status = resp.StatusCode
			msg += fmt.Sprintf(" (HTTP %d)", status)
		}
		return nil, withStatus(fail(sec, ErrDial, msg, err), status)
	}
	ws.SetReadLimit(MaxMessageSize)
	return &Conn{ws: ws}, nil
}

// handshakeClient returns the client the handshake uses, and the timeout
// the caller's client asked for. http.Client.Timeout covers reading the
// response body, and the body of a 101 answer is the websocket itself: left
// in place it would cut the session off after Timeout. The websocket
// library makes the same copy; making it here does not depend on that.
func handshakeClient(client *http.Client) (*http.Client, time.Duration) {
	if client == nil {
		client = http.DefaultClient
	}
	hc := *client
	hc.Timeout = 0
	hc.CheckRedirect = refuseRedirect
	return &hc, client.Timeout
}

// refuseRedirect makes a client return a 3xx answer instead of following
// it: a CDP endpoint is dialled where the provider said, and nowhere else.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// parseEndpoint parses raw and checks its scheme (one of schemes) and host.
func parseEndpoint(raw string, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("does not parse")
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return nil, fmt.Errorf("has scheme %q, want %s", u.Scheme, strings.Join(schemes, " or "))
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, errors.New("has no host")
	}
	return u, nil
}

// checkCleartext refuses a URL that would carry credentials unencrypted to
// a host that is not loopback.
func checkCleartext(u *url.URL) error {
	if u.Scheme != "ws" && u.Scheme != "http" {
		return nil
	}
	if u.RawQuery == "" && u.User == nil {
		return nil
	}
	if IsLoopbackHost(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("it carries credentials over %s to %s, which is not loopback; use %ss", u.Scheme, u.Hostname(), u.Scheme)
}

// IsLoopbackHost reports whether host (a URL's Hostname) is a loopback IP
// literal (127.0.0.0/8, ::1) or exactly "localhost": a host credentials
// may go to in cleartext. A name under localhost, and "localhost." with
// its dot, are not: Go's and glibc's resolvers ask the DNS server for
// them, so whoever answers would get the credentials. package provider
// asks the same of its endpoints.
func IsLoopbackHost(host string) bool {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().IsLoopback()
	}
	return strings.EqualFold(host, "localhost")
}

// SetDebugf sets the protocol logger; chromedp.NewBrowserTransport calls it
// with the browser's logger.
func (c *Conn) SetDebugf(f func(string, ...any)) { c.debugf = f }

func (c *Conn) logf(format string, args ...any) {
	if c.debugf != nil {
		c.debugf(format, args...)
	}
}

// Read reads the next CDP message. A close with status 1000 or 1001 gives
// io.EOF, as chromedp's own websocket does. The websocket library answers
// pings while it reads.
func (c *Conn) Read(ctx context.Context, msg *cdproto.Message) error {
	typ, r, err := c.ws.Reader(ctx)
	if err != nil {
		return readErr(err)
	}
	if typ != websocket.MessageText {
		return ErrInvalidMessage
	}
	c.rbuf.Reset()
	if _, err := c.rbuf.ReadFrom(r); err != nil {
		return readErr(err)
	}
	data := c.rbuf.Bytes()
	c.logf("<- %s", data)
	// Unmarshal copies what it keeps (Params, Result are fresh slices),
	// so the buffer can be reused for the next message; and it decodes in
	// place, with no buffer of its own that a reused decoder would keep
	// as large as the largest message.
	err = jsonv2.Unmarshal(data, msg, chromedp.DefaultUnmarshalOptions)
	if c.rbuf.Cap() > retainLimit {
		c.rbuf = bytes.Buffer{}
	}
	return err
}

func readErr(err error) error {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return io.EOF
	}
	return err
}

// writeTimeout bounds the write of one message: a peer that reads nothing
// for this long is taken for gone, and the connection is closed.
const writeTimeout = 30 * time.Second

// Write sends one CDP message as a single text frame: Chromium does not
// accept fragmented messages.
//
// ctx decides only whether the message is sent at all. The websocket
// library closes the whole connection when the context of a write ends
// during it, or has ended when the write takes its lock (it picks at random
// between the lock and the ended context): one caller that gave up, say a
// guard's lookup past its bound or a call its caller cancelled, cut the
// connection of every tab on the browser, and left their pages open there
// with nobody to close them. So the write itself runs on writeTimeout.
func (c *Conn) Write(ctx context.Context, msg *cdproto.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.encMu.Lock()
	defer c.encMu.Unlock()
	c.encBuf.Reset()
	c.encoder.Reset(&c.encBuf, chromedp.DefaultMarshalOptions)
	if err := jsonv2.MarshalEncode(&c.encoder, msg, chromedp.DefaultMarshalOptions); err != nil {
		return err
	}
	c.logf("-> %s", c.encBuf.Bytes())
	wctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	err := c.ws.Write(wctx, websocket.MessageText, c.encBuf.Bytes())
	cancel()
	if c.encBuf.Cap() > retainLimit {
		c.encBuf = bytes.Buffer{}
	}
	return err
}

// Close closes the connection at once, without the close handshake: the
// handshake can wait 5 s for a peer that no longer answers, and chromedp
// has closed the session's tabs over CDP before it closes the transport.
// The remote browser lives on. Close is safe to call more than once.
func (c *Conn) Close() error {
	if err := c.ws.CloseNow(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
