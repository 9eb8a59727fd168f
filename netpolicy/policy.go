package netpolicy

import (
	"errors"
	"fmt"

	"github.com/hybroute/hybroute/route"
)

// Policy is the one allow/refuse rule: what a verdict may open where. A
// plan asks it for every URL literal, a guard for every request it pauses,
// a landed-URL check for the URL a tab ended on, and an egress check for
// every connection of the local browser; they cannot disagree, because
// they ask the same value the same question. A Policy is a plain value:
// a copy never changes under its holder, so it is shared without a lock.
//
// The zero Policy is the strictest: no private address on any browser, no
// credential in a literal on a cloud one, no operator rules.
type Policy struct {
	// PrivateOnLocal lets a private address be opened on the local browser.
	PrivateOnLocal bool
	// PrivateOnCloud lets a private address be opened on a cloud browser
	// (which usually cannot reach this machine's network anyway).
	PrivateOnCloud bool
	// SecretsOnCloud lets a URL literal that carries a credential
	// ([Verdict].Credential) be opened on a cloud browser.
	SecretsOnCloud bool
	// Hosts are the operator's allow and block lists; nil: none.
	Hosts *HostRules
}

// Refuse is the allow/refuse rule for any URL a browser at w would open:
// nil when v may be opened there, else a [*BlockedError] that names the
// reason. The operator rules come first; metadata and URLs that cannot be
// routed are refused everywhere; a private address is refused where the
// policy does not let one run. A w that is neither [route.Local] nor [route.Cloud]
// lets no private address through (fail closed).
func (p Policy) Refuse(v Verdict, w route.Route) error {
	if r := p.Hosts.Refuse(v); r != 0 {
		return Block(v, r, nil)
	}
	switch v.Class {
	case ClassMetadata:
		return Block(v, ReasonMetadata, nil)
	case ClassInvalid:
		if v.Err != nil {
			return v.Err // the classifier's refusal, with what was wrong
		}
		return Block(v, ReasonInvalidURL, nil)
	case ClassPrivate:
		switch {
		case w == route.Local && !p.PrivateOnLocal:
			return Block(v, ReasonPrivate, nil)
		case w == route.Cloud && !p.PrivateOnCloud, w != route.Local && w != route.Cloud:
			return Block(v, ReasonPrivateOnRemote, nil)
		}
	}
	return nil
}

// RefuseLiteral is Refuse for a URL literal of a call ([MarkLiteral]),
// where w is the browser the call takes such a literal to: the secrets
// rule adds that a literal carrying a credential is refused on any browser
// but the local one unless SecretsOnCloud.
func (p Policy) RefuseLiteral(v Verdict, w route.Route) error {
	if err := p.Refuse(v, w); err != nil {
		return err
	}
	if w != route.Local && p.KeepsOffCloud(v) {
		return Block(v, ReasonSecretInURL, secretDetail(v.Credential))
	}
	return nil
}

// KeepsOffCloud reports whether the secrets rule keeps v, a URL literal,
// off cloud browsers: it carries a credential, and the policy does not
// allow it there. A router that has a local browser takes such a call
// there instead.
func (p Policy) KeepsOffCloud(v Verdict) bool {
	return v.Credential != "" && !p.SecretsOnCloud && (v.Class == ClassPublic || v.Class == ClassPrivate)
}

// secretDetail names the credential a URL carries, for its refusal.
func secretDetail(name string) error {
	if name == "password" {
		return errors.New("a userinfo password; WithAllowSecretsInURLs(true) lets it through")
	}
	return fmt.Errorf("query parameter %q; WithAllowSecretsInURLs(true) lets it through", name)
}

// RefuseHop is Refuse for one document request of a tab, which may be a
// hop of a redirect chain: a private hop after a public one (afterPublic)
// is refused on every browser, as that is how a public page walks a
// browser into a LAN.
func (p Policy) RefuseHop(v Verdict, w route.Route, afterPublic bool) error {
	if err := p.Refuse(v, w); err != nil {
		return err
	}
	if afterPublic && v.Class == ClassPrivate {
		return Block(v, ReasonRedirectToPrivate, errRedirectFromPublic)
	}
	return nil
}

var errRedirectFromPublic = errors.New("redirect from a public address")
