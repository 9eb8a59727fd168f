package provider_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/provider"
)

// Red team of issue 33, item 5: spellings of loopback, metadata and
// private addresses in a provider URL. Each URL is one the check must
// refuse (keyed: a key would go with it).
func TestRedTeam33ProviderURLSpellings(t *testing.T) {
	t.Parallel()
	refused := []struct {
		url   string
		keyed bool
	}{
		// Cleartext with a key to something that is not loopback.
		{"http://0x7f.1/", true},
		{"http://127.1/", true},
		{"http://2130706433/", true},
		{"http://127.0.0.1@10.0.0.5/", true},
		{"http://10.0.0.5#@127.0.0.1/", true},
		{"http://localhost.example/", true},
		{"http://x.localhost/", true},
		{"http://[::ffff:10.0.0.5]/", true},
		{"http://[::]/", true},
		{"http://0.0.0.0/", true},
		{"HTTP://10.0.0.5/", true},
		{"ws://10.0.0.5/devtools/browser/x?token=k", true},
		{"http://user:pass@10.0.0.5/", false},
		// Metadata, always.
		{"https://169.254.169.254./", false},
		{"https://[::ffff:169.254.169.254]/", false},
		{"https://[::ffff:a9fe:a9fe]/", false},
		{"https://[fe80::a9fe:a9fe%25eth0]/", false},
		{"https://METADATA.GOOGLE.INTERNAL./", false},
		{"https://metadata.google.internal%2e/", false},
		{"https://metadata/", false},
		{"https://instance-data./", false},
		{"http://169.254.170.2/", false},
		// Private, without WithPrivateEndpoint.
		{"https://10.0.0.5./", false},
		{"https://[::ffff:10.0.0.5]/", false},
		{"https://[fd12::5]/", false},
		{"https://[fe80::1%25eth0]/", false},
		{"https://100.64.0.5/", false},
		{"https://0.0.0.0/", false},
		{"https://[::]/", false},
		// IPv6 forms that reach an IPv4 address, judged by it as the
		// router judges them (netpolicy.ClassifyAddr).
		{"https://[2002:a00:5::]/", false}, // 6to4 of 10.0.0.5
		{"https://[::10.0.0.5]/", false},   // IPv4-compatible
		{"https://198.18.0.5/", false},     // benchmarking, not global
	}
	for _, c := range refused {
		assert.Error(t, provider.CheckEndpoint(c.url, c.keyed), "held if refused: %s", c.url)
	}
	allowed := []string{"http://127.0.0.1:9/", "http://LOCALHOST:9/", "http://[::1]:9/", "http://[::ffff:127.0.0.1]:9/"}
	for _, u := range allowed {
		assert.NoError(t, provider.CheckEndpoint(u, true), "loopback stays usable: %s", u)
	}
}

// TestRedTeam33ProviderURLNumericSpellings: IPv4 spellings that are no
// literal to Go's URL parser but that the C library's resolver (glibc's
// and macOS's getaddrinfo, inet_aton) reads as the address itself, so
// with the cgo resolver (GODEBUG=netdns=cgo, the default on macOS) they
// reach the metadata service or the LAN with no DNS at all. Measured in a
// namespace with 169.254.169.254 on lo: each of the metadata spellings
// below connected under netdns=cgo. Also the NAT64 form of metadata.
func TestRedTeam33ProviderURLNumericSpellings(t *testing.T) {
	for _, u := range []string{
		"https://2852039166/",           // 169.254.169.254, decimal
		"https://0xa9fea9fe/",           // hex
		"https://0xa9.0xfe.0xa9.0xfe/",  // hex by part
		"https://0251.0376.0251.0376/",  // octal
		"https://169.254.43518/",        // a.b.c16
		"https://[64:ff9b::a9fe:a9fe]/", // NAT64 of metadata
		"https://167772165/",            // 10.0.0.5
		"https://012.0.0.5/",            // 10.0.0.5, octal
	} {
		assert.ErrorIs(t, provider.CheckEndpoint(u, false), provider.ErrPrivateEndpoint, u)
	}
}

// TestRedTeam33RedirectCarriesKey: a caller's client that follows
// redirects (any &http.Client{} does) is used as given, so an https or
// loopback provider that answers 307 to http://10.0.0.5/ has the key
// header sent there in cleartext, never checked: net/http drops
// Authorization on another host but keeps X-BB-API-Key. The dialer sends
// every connection to the loopback stand-in, so nothing leaves.
func TestRedTeam33RedirectCarriesKey(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var stolen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "10.0.0.5:8080" {
			mu.Lock()
			stolen = append(stolen, r.Header.Get("X-BB-API-Key"))
			mu.Unlock()
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		http.Redirect(w, r, "http://10.0.0.5:8080/steal", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	var d net.Dialer
	hc := &http.Client{ // a careless caller's client: redirects followed
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}},
		Timeout: 10 * time.Second,
	}
	bb := provider.NewBrowserbase("sk_live_REDTEAM", "proj", provider.WithBaseURL(srv.URL), provider.WithHTTPClient(hc))
	_, err := bb.CreateSession(context.Background(), "k")
	require.Error(t, err)
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, stolen, "the key went in cleartext to 10.0.0.5 after a redirect")
}

// TestRedTeam33ProviderKeyToLocalhostDot: "localhost." (with its dot) is
// taken for loopback, but neither Go's resolver nor glibc's finds it in
// /etc/hosts ("127.0.0.1 localhost"): both ask the DNS server (measured,
// Go 1.26, pure and cgo), so the key goes in cleartext to whatever it
// answers: the reason 58c8159 gives for refusing names under localhost.
func TestRedTeam33ProviderKeyToLocalhostDot(t *testing.T) {
	// Nor is "127.0.0.1." with its dot an address to Go's dialer: no IP
	// literal, it goes to the resolver as a name (Go's pure resolver
	// answers no such host, measured; the C library's may ask DNS), so it
	// is no loopback the key may go to in cleartext, as cdpconn already
	// held.
	for _, u := range []string{"http://localhost.:9/", "http://LOCALHOST.:9/", "ws://localhost.:9/devtools/browser/x?token=k", "http://127.0.0.1.:9/"} {
		assert.ErrorIs(t, provider.CheckEndpoint(u, true), provider.ErrCleartext, u)
	}
}

// TestRedTeam33CDPPathTokenOverWS: a CDP endpoint's token in its path
// (…/devtools/browser/TOKEN, or a provider's /TOKEN/…), which
// --print-config treats as a credential, goes over plain ws to a public
// host: only a query or userinfo counts as a key here.
func TestRedTeam33CDPPathTokenOverWS(t *testing.T) {
	for _, u := range []string{
		"ws://cdp.example.com/devtools/browser/S3CRETPATHTOKEN0123456789",
		"ws://cdp.example.com/S3CRETPATHTOKEN0123456789/devtools/browser/x",
	} {
		_, err := provider.CDPEndpoint(u).CreateSession(context.Background(), "k")
		assert.ErrorIs(t, err, provider.ErrCleartext, u)
	}
}
