package netpolicy_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
)

func TestHostPatterns(t *testing.T) {
	t.Parallel()
	rules, err := netpolicy.ParseHostRules([]string{"example.com", "*.good.test", "10.1.0.0/16"}, []string{"bad.good.test", "10.1.2.3", "*.EVIL.test"})
	require.NoError(t, err)
	cls := netpolicy.NewClassifier(dnstest.Static{})
	for _, c := range []struct {
		url   string
		addrs []string
		want  netpolicy.Reason
	}{
		{"https://example.com/", nil, 0},
		{"https://EXAMPLE.com./x", nil, 0},
		{"https://www.example.com/", nil, netpolicy.ReasonHostNotAllowed}, // a host pattern is that host only
		{"https://a.good.test/", nil, 0},
		{"https://good.test/", nil, netpolicy.ReasonHostNotAllowed},  // *.name is its subdomains
		{"https://bad.good.test/", nil, netpolicy.ReasonHostBlocked}, // block wins over allow
		{"https://x.evil.test/", nil, netpolicy.ReasonHostBlocked},
		{"https://X.Evil.Test../", nil, netpolicy.ReasonHostBlocked}, // any run of trailing dots is the same host to DNS
		{"https://bad.good.test%2e%2e/", nil, netpolicy.ReasonHostBlocked},
		{"http://10.1.9.9/", nil, 0},
		{"http://10.1.2.3/", nil, netpolicy.ReasonHostBlocked},
		{"http://0x0a010203/", nil, netpolicy.ReasonHostBlocked}, // as Chromium reads it
		{"http://10.2.0.1/", nil, netpolicy.ReasonHostNotAllowed},
		{"http://intranet.test/", []string{"10.1.0.7"}, 0},
		{"http://split.test/", []string{"10.1.0.7", "10.9.0.1"}, netpolicy.ReasonHostNotAllowed},    // every address must be in
		{"http://rebind.test/", []string{"93.184.215.14", "10.1.2.3"}, netpolicy.ReasonHostBlocked}, // any address blocks
		{"about:blank", nil, 0},
	} {
		v, _ := cls.Parse(c.url)
		if c.addrs != nil {
			v = netpolicy.Resolved(v, dnstest.Addrs(c.addrs...), nil)
		} else if v.Class == 0 {
			v.Class = netpolicy.ClassPublic
		}
		assert.Equal(t, c.want, rules.Refuse(v), c.url)
	}
	for _, bad := range []string{"", "*", "http://x/", "a b", "*.*.x", "x:80"} {
		_, err := netpolicy.ParseHostRules(nil, []string{bad})
		assert.ErrorIs(t, err, netpolicy.ErrHostRule, "%q", bad)
	}
}

// TestHostRulesBlockedIsACopy: the block list a guard writes its own rules
// from reads as parsed, and writing to it changes no rule.
func TestHostRulesBlockedIsACopy(t *testing.T) {
	t.Parallel()
	rules, err := netpolicy.ParseHostRules(nil, []string{"Bad.test", "*.evil.test", "10.1.2.3", "10.0.0.0/8"})
	require.NoError(t, err)
	got := rules.Blocked()
	assert.Equal(t, []netpolicy.HostPattern{
		{Host: "bad.test"}, {Suffix: ".evil.test"},
		{Prefix: netip.MustParsePrefix("10.1.2.3/32")}, {Prefix: netip.MustParsePrefix("10.0.0.0/8")},
	}, got)
	got[0].Host = "other.test"
	v := netpolicy.Verdict{URL: "http://bad.test/", Host: "bad.test", Class: netpolicy.ClassPublic}
	assert.Equal(t, netpolicy.ReasonHostBlocked, rules.Refuse(v))

	var none *netpolicy.HostRules
	assert.Nil(t, none.Blocked())
	assert.Zero(t, none.Refuse(v), "no rules refuse nothing")
	r, err := netpolicy.ParseHostRules(nil, nil)
	require.NoError(t, err)
	assert.Nil(t, r, "no patterns are no rules")
}
