package netpolicy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/dnstest"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// TestPolicyRule is the rule on its own, for the switches a router's
// options come down to: the reason Refuse, RefuseLiteral and RefuseHop
// (after a public hop) give at each browser, "" where the URL may be
// opened. Metadata and URLs that cannot be routed are refused everywhere;
// a private address where its switch is off; a literal with a credential
// on a remote browser unless SecretsOnCloud; a private hop after a
// public one everywhere.
func TestPolicyRule(t *testing.T) {
	t.Parallel()
	cls := netpolicy.NewClassifier(dnstest.Examples)
	urls := map[string]string{
		"public":   "https://example.com/",
		"secret":   "https://example.com/?token=abc",
		"private":  "http://192.168.1.9/",
		"metadata": "http://169.254.169.254/",
		"invalid":  "javascript:alert(1)",
		"noroute":  "about:blank",
	}
	// For each policy, URL and browser: Refuse, RefuseLiteral, RefuseHop.
	type row [3]string
	const (
		meta = "metadata"
		inv  = "scheme_not_allowed"
		priv = "private"
		rem  = "private_on_remote"
		sec  = "secret_in_url"
		hop  = "redirect_to_private"
	)
	all := func(r string) row { return row{r, r, r} }
	for _, c := range []struct {
		policy netpolicy.Policy
		want   map[string]map[route.Route]row
	}{
		{netpolicy.Policy{}, map[string]map[route.Route]row{
			"public":   {route.Local: {}, route.Cloud: {}},
			"secret":   {route.Local: {}, route.Cloud: {"", sec, ""}},
			"private":  {route.Local: all(priv), route.Cloud: all(rem)},
			"metadata": {route.Local: all(meta), route.Cloud: all(meta)},
			"invalid":  {route.Local: all(inv), route.Cloud: all(inv)},
			"noroute":  {route.Local: {}, route.Cloud: {}},
		}},
		{netpolicy.Policy{PrivateOnLocal: true}, map[string]map[route.Route]row{
			"public":   {route.Local: {}, route.Cloud: {}},
			"secret":   {route.Local: {}, route.Cloud: {"", sec, ""}},
			"private":  {route.Local: {"", "", hop}, route.Cloud: all(rem)},
			"metadata": {route.Local: all(meta), route.Cloud: all(meta)},
			"invalid":  {route.Local: all(inv), route.Cloud: all(inv)},
			"noroute":  {route.Local: {}, route.Cloud: {}},
		}},
		{netpolicy.Policy{PrivateOnLocal: true, PrivateOnCloud: true, SecretsOnCloud: true}, map[string]map[route.Route]row{
			"public":   {route.Local: {}, route.Cloud: {}},
			"secret":   {route.Local: {}, route.Cloud: {}},
			"private":  {route.Local: {"", "", hop}, route.Cloud: {"", "", hop}},
			"metadata": {route.Local: all(meta), route.Cloud: all(meta)},
			"invalid":  {route.Local: all(inv), route.Cloud: all(inv)},
			"noroute":  {route.Local: {}, route.Cloud: {}},
		}},
	} {
		for kind, byWhere := range c.want {
			v := cls.Classify(context.Background(), urls[kind], nil)
			netpolicy.MarkLiteral(&v)
			for w, want := range byWhere {
				at := fmt.Sprintf("%+v: %s at %v", c.policy, kind, w)
				got := row{
					netpolicy.ReasonOf(c.policy.Refuse(v, w)),
					netpolicy.ReasonOf(c.policy.RefuseLiteral(v, w)),
					netpolicy.ReasonOf(c.policy.RefuseHop(v, w, true)),
				}
				assert.Equal(t, want, got, at)
				for i, err := range []error{c.policy.Refuse(v, w), c.policy.RefuseLiteral(v, w), c.policy.RefuseHop(v, w, true)} {
					if want[i] != "" {
						var be *netpolicy.BlockedError
						require.ErrorAs(t, err, &be, at)
						assert.Contains(t, err.Error(), "("+want[i]+")", "the error names the reason")
					}
				}
				assert.Equal(t, c.policy.Refuse(v, w), c.policy.RefuseHop(v, w, false), "a hop that follows no public one is any request: %s", at)
			}
		}
	}
}

// TestPolicyFailsClosed: a browser the rule does not know lets no private
// address through, whatever the switches, and a literal with a credential
// is kept off it.
func TestPolicyFailsClosed(t *testing.T) {
	t.Parallel()
	cls := netpolicy.NewClassifier(dnstest.Examples)
	open := netpolicy.Policy{PrivateOnLocal: true, PrivateOnCloud: true}
	v := cls.Classify(context.Background(), "http://10.0.0.1/", nil)
	for _, w := range []route.Route{-1, route.None, 3} {
		assert.ErrorIs(t, open.Refuse(v, w), netpolicy.ErrPrivate, "%v", w)
	}
	var unset route.Route
	local := netpolicy.Policy{PrivateOnLocal: true}
	assert.ErrorIs(t, local.Refuse(v, unset), netpolicy.ErrPrivate, "an unset route (none) is held to the cloud's rules")
	s := cls.Classify(context.Background(), "https://example.com/?api_key=abc", nil)
	netpolicy.MarkLiteral(&s)
	assert.Equal(t, "api_key", s.Credential)
	assert.True(t, open.KeepsOffCloud(s))
	assert.ErrorIs(t, open.RefuseLiteral(s, unset), netpolicy.ErrSecretInURL)
	assert.NoError(t, open.Refuse(s, route.Cloud), "only literals are held to the secrets rule")
}

// TestPolicyHostRulesComeFirst: an operator rule refuses a URL the rest of
// the rule lets through, and never lets through one it refuses.
func TestPolicyHostRulesComeFirst(t *testing.T) {
	t.Parallel()
	cls := netpolicy.NewClassifier(dnstest.Examples)
	rules, err := netpolicy.ParseHostRules([]string{"example.com", "169.254.0.0/16", "192.168.0.0/16"}, []string{"lan.example"})
	require.NoError(t, err)
	p := netpolicy.Policy{PrivateOnLocal: true, Hosts: rules}
	for url, want := range map[string]error{
		"https://example.com/":     nil,
		"http://lan.example/":      netpolicy.ErrHostRule, // blocked by name, though private is allowed here
		"https://v6only.example/":  netpolicy.ErrHostRule, // not on the allow list
		"http://169.254.169.254/":  netpolicy.ErrMetadata, // allowed by the list, still metadata
		"http://192.168.1.9/":      nil,
		"http://[fd12:3456::1]:8/": netpolicy.ErrHostRule,
	} {
		err := p.Refuse(cls.Classify(context.Background(), url, nil), route.Local)
		if want == nil {
			assert.NoError(t, err, url)
		} else {
			assert.ErrorIs(t, err, want, url)
		}
	}
}
