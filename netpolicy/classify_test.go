package netpolicy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// testPolicy decides URL literals as a router with no cloud does: names
// from dnstest.Examples, every literal opened on the local browser, where
// private addresses may run.
type testPolicy struct {
	cls  *netpolicy.Classifier
	rule netpolicy.Policy
}

func newTestPolicy(t testing.TB) testPolicy {
	t.Helper()
	return testPolicy{cls: netpolicy.NewClassifier(dnstest.Examples), rule: netpolicy.Policy{PrivateOnLocal: true}}
}

// literal is the verdict on a URL literal: classified, marked, refused.
func (p testPolicy) literal(rawURL string) netpolicy.Verdict {
	v := p.cls.Classify(context.Background(), rawURL, nil)
	netpolicy.MarkLiteral(&v)
	v.Err = p.rule.RefuseLiteral(v, route.Local)
	return v
}

func TestVerdictClassifiesAsChromiumParses(t *testing.T) {
	t.Parallel()
	r := newTestPolicy(t)
	rows := []struct {
		rule, url, host string
		want            netpolicy.Class
	}{
		{"hex IPv4 part", "http://0x7f.1/", "127.0.0.1", netpolicy.ClassPrivate},
		{"single decimal number", "http://2130706433/", "127.0.0.1", netpolicy.ClassPrivate},
		{"octal leading zero", "http://012.0.0.1/", "10.0.0.1", netpolicy.ClassPrivate},
		{"metadata as one number", "http://2852039166/latest", "169.254.169.254", netpolicy.ClassMetadata},
		{"metadata in hex", "http://0xa9fea9fe/", "169.254.169.254", netpolicy.ClassMetadata},
		{"metadata in octal parts", "http://0251.0376.0251.0376/", "169.254.169.254", netpolicy.ClassMetadata},
		{"full-width digits", "http://１２７．０．０．１/", "127.0.0.1", netpolicy.ClassPrivate},
		{"ideographic full stop", "http://169。254。169。254/", "169.254.169.254", netpolicy.ClassMetadata},
		{"percent-encoded host", "http://%31%32%37.0.0.1/", "127.0.0.1", netpolicy.ClassPrivate},
		{"backslashes as slashes", `http:\\127.0.0.1\x`, "127.0.0.1", netpolicy.ClassPrivate},
		{"userinfo ends at the last @", "http://a@b@127.0.0.1/", "127.0.0.1", netpolicy.ClassPrivate},
		{"upper-case scheme", "HTTP://LOCALHOST:3000/", "localhost", netpolicy.ClassPrivate},
		{"IPv6 loopback", "http://[::1]:8080/", "[::1]", netpolicy.ClassPrivate},
		{"IPv4-mapped metadata", "http://[::ffff:169.254.169.254]/", "[::ffff:a9fe:a9fe]", netpolicy.ClassMetadata},
		{"Akamai (Linode) IPv6 metadata", "http://[fd00:a9fe:a9fe:0::1]/v1/token", "[fd00:a9fe:a9fe::1]", netpolicy.ClassMetadata},
		{"localhost with trailing dot", "http://localhost./", "localhost.", netpolicy.ClassPrivate},
		{"subdomain of localhost", "http://app.localhost:5173/", "app.localhost", netpolicy.ClassPrivate},
		{"metadata name", "http://metadata.google.internal/computeMetadata/v1/", "metadata.google.internal", netpolicy.ClassMetadata},
		{"metadata name, any case, trailing dot", "http://METADATA.Google.Internal./", "metadata.google.internal.", netpolicy.ClassMetadata},
		{"metadata bare name", "http://metadata/", "metadata", netpolicy.ClassMetadata},
		{"metadata.goog", "http://metadata.goog/", "metadata.goog", netpolicy.ClassMetadata},
		{"instance-data", "http://instance-data/latest/", "instance-data", netpolicy.ClassMetadata},
		{"public name", "https://example.com/", "example.com", netpolicy.ClassPublic},
		{"name resolving to LAN", "http://lan.example/", "lan.example", netpolicy.ClassPrivate},
		{"name mixing public and private answers", "https://mixed.example/", "mixed.example", netpolicy.ClassPrivate},
		{"name mixing in a metadata answer", "https://meta-mixed.example/", "meta-mixed.example", netpolicy.ClassMetadata},
		{"name resolving to ULA", "https://ula.example/", "ula.example", netpolicy.ClassPrivate},
		{"public IPv6-only name", "https://v6only.example/", "v6only.example", netpolicy.ClassPublic},
		{"websocket scheme", "ws://127.0.0.1:9222/devtools", "127.0.0.1", netpolicy.ClassPrivate},
		{"secure websocket scheme", "wss://example.com/socket", "example.com", netpolicy.ClassPublic},
		{"unresolvable name is public", "https://nx.example/", "nx.example", netpolicy.ClassPublic},
		{"name with no answers is public", "https://empty.example/", "empty.example", netpolicy.ClassPublic},
		{"unresolvable private-use suffix is private", "http://nas.home.arpa/", "nas.home.arpa", netpolicy.ClassPrivate},
		{"unresolvable .local is private", "http://printer2.local/", "printer2.local", netpolicy.ClassPrivate},
		{"resolvable .internal judged by its answer", "http://public.internal/", "public.internal", netpolicy.ClassPublic},
		{"about:blank needs no route", "about:blank", "", netpolicy.ClassNoRoute},
		{"data: needs no route", "data:text/html,<h1>x</h1>", "", netpolicy.ClassNoRoute},
		{"file: refused by default", "file:///etc/passwd", "", netpolicy.ClassInvalid},
		{"ftp: refused", "ftp://example.com/", "", netpolicy.ClassInvalid},
		{"javascript: refused", "javascript:alert(1)", "", netpolicy.ClassInvalid},
		{"chrome: refused", "chrome://settings", "", netpolicy.ClassInvalid},
		{"about:other refused", "about:config", "", netpolicy.ClassInvalid},
		{"IPv4 overflow refused", "http://4294967296/", "", netpolicy.ClassInvalid},
		{"IPv4 part overflow refused", "http://1.2.3.256/", "", netpolicy.ClassInvalid},
		{"empty host refused", "http://", "", netpolicy.ClassInvalid},
		{"empty host with a port refused", "http://:80/", "", netpolicy.ClassInvalid},
		{"extra slashes are skipped, as Chromium does", "http:///127.0.0.1/x", "127.0.0.1", netpolicy.ClassPrivate},
		{"no slashes at all", "http:localhost:3000", "localhost", netpolicy.ClassPrivate},
		{"garbage refused", "http://[::1/", "", netpolicy.ClassInvalid},
		{"no scheme refused", "localhost:3000", "", netpolicy.ClassInvalid},
	}
	for _, row := range rows {
		t.Run(row.rule, func(t *testing.T) {
			v := r.literal(row.url)
			assert.Equal(t, row.url, v.URL)
			assert.Equal(t, row.want.String(), v.Class.String(), "class of %q", row.url)
			if row.host != "" {
				assert.Equal(t, row.host, v.Host)
			}
			switch row.want {
			case netpolicy.ClassMetadata:
				require.ErrorIs(t, v.Err, netpolicy.ErrMetadata)
				assert.Contains(t, v.Err.Error(), "URL targets a cloud metadata endpoint")
				assert.Contains(t, v.Err.Error(), row.url)
			case netpolicy.ClassInvalid:
				require.ErrorIs(t, v.Err, netpolicy.ErrInvalidURL)
			default:
				assert.NoError(t, v.Err, "private allowed on the local browser: everything but metadata and invalid may be opened")
			}
			if len(v.Addrs) > 0 {
				assert.Equal(t, v.Class, netpolicy.ClassifyAddrs(v.Addrs), "class agrees with the pinned addresses")
			}
		})
	}
}

func TestVerdictKeepsResolveError(t *testing.T) {
	t.Parallel()
	r := newTestPolicy(t)
	v := r.literal("https://nx.example/")
	assert.Equal(t, netpolicy.ClassPublic, v.Class)
	assert.ErrorIs(t, v.ResolveErr, dnstest.ErrNXDomain)
	assert.Empty(t, v.Addrs)

	v = r.literal("https://example.com/")
	assert.NoError(t, v.ResolveErr)
	assert.Equal(t, dnstest.Examples["example.com"], v.Addrs, "the addresses decided on are pinned")
}

func TestVerdictErrorsAreWrapped(t *testing.T) {
	t.Parallel()
	r := newTestPolicy(t)
	v := r.literal("http://169.254.169.254/latest/meta-data/")
	var be *netpolicy.BlockedError
	require.ErrorAs(t, v.Err, &be)
	assert.Equal(t, netpolicy.ClassMetadata, be.Class)
	assert.Equal(t, "http://169.254.169.254/latest/meta-data/", be.URL)
	assert.Equal(t, netpolicy.ReasonMetadata, be.Reason)
	assert.True(t, strings.HasPrefix(v.Err.Error(), "hybroute: blocked (metadata): URL targets a cloud metadata endpoint"), v.Err.Error())
}

func TestClassifierAllowedSchemes(t *testing.T) {
	t.Parallel()
	cls := netpolicy.NewClassifier(dnstest.Examples, "FILE:")
	assert.True(t, cls.AllowsScheme("file"), "the scheme is read lower case, without its colon")
	assert.False(t, cls.AllowsScheme("ftp"))
	v := cls.Classify(context.Background(), "file:///etc/hostname", nil)
	assert.Equal(t, netpolicy.ClassPrivate, v.Class, "a file: URL reads this machine: local only")
	assert.NoError(t, v.Err)
	strict := netpolicy.Policy{PrivateOnCloud: true}
	assert.ErrorIs(t, strict.Refuse(v, route.Local), netpolicy.ErrPrivate,
		"an allowed scheme is still private where private URLs are refused")
	assert.Equal(t, netpolicy.ClassInvalid, netpolicy.NewClassifier(dnstest.Examples).Classify(context.Background(), "file:///etc/hostname", nil).Class)
	assert.NotNil(t, netpolicy.NewClassifier(nil).Resolver(), "nil is net.DefaultResolver")
	assert.Equal(t, netpolicy.Resolver(dnstest.Examples), cls.Resolver())
}
