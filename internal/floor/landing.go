package floor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/guard"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
)

// The landed-URL check: after a call, redirects and scripts can have
// taken a page where no literal said it would go, so the URL each page of
// the session is on is decided again, on the call's answers.

// RefuseLanding decides on the URL u a tab of browser w landed on, with
// the call's answers, and counts a refusal.
func (p *Policy) RefuseLanding(ctx context.Context, u string, w route.Route, scope *CallScope) error {
	refused := p.Refuse(p.ClassifyWith(ctx, u, scope.Lookups()), w)
	if refused != nil {
		p.refused(ctx, "landing", refused)
	}
	return refused
}

// CheckLanding re-checks the pages of a session on a CDP browser w: the
// front tab, landed on landed, which a refusal sends to about:blank (its
// context is tabCtx), and, when the browser has a guard g, the popups its
// pages opened, which a refusal closes. It reports whether the front tab
// was sent to about:blank. chrome-error://chromewebdata/ is where a failed
// load leaves a page: it ran nothing, so it passes.
func (p *Policy) CheckLanding(ctx, tabCtx context.Context, landed string, w route.Route, scope *CallScope, g *guard.Guard, s *guard.Session) (bool, error) {
	var err error
	var blanked bool
	if refused := p.RefuseLanding(ctx, landed, w, scope); refused != nil {
		blanked, err = browsertab.ToBlank(tabCtx, fmt.Errorf("hybroute: the page landed on a blocked address: %w", refused))
	}
	if g == nil {
		return blanked, err
	}
	for id, u := range g.Popups(s) {
		if u == "" {
			// Its navigation was not seen: ask the browser, which names
			// the URL it is loading or has loaded.
			qctx, cancel := context.WithTimeout(context.Background(), browsertab.ControlTimeout)
			u, _ = g.TargetURL(qctx, id)
			cancel()
			if u == "" {
				continue // gone, or about:blank
			}
		}
		refused := p.RefuseLanding(ctx, u, w, scope)
		if refused == nil {
			continue
		}
		perr := fmt.Errorf("hybroute: popup %s landed on a blocked address, so it was closed: %w", redact.URL(guard.ClipURL(u)), refused)
		cctx, cancel := context.WithTimeout(context.Background(), browsertab.ControlTimeout)
		cerr := g.CloseTarget(cctx, id)
		cancel()
		if cerr != nil {
			perr = errors.Join(perr, fmt.Errorf("hybroute: closing the popup: %w", cerr))
		}
		err = errors.Join(err, perr)
	}
	return blanked, err
}

// JoinRefusals joins the errors of a call's blocked literals, metadata
// first, so the message leads with the most serious reason.
func JoinRefusals(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	rank := func(e error) int {
		for i, want := range [...]error{netpolicy.ErrMetadata, netpolicy.ErrInvalidURL, netpolicy.ErrPrivate, netpolicy.ErrHostRule, netpolicy.ErrSecretInURL} {
			if errors.Is(e, want) {
				return i
			}
		}
		return 5
	}
	sorted := slices.Clone(errs)
	slices.SortStableFunc(sorted, func(a, b error) int { return rank(a) - rank(b) })
	return errors.Join(sorted...)
}

// BlockedWebSockets are the offline rules (internal/guard) that stop
// WebSockets to blocked hosts, which the Fetch domain never pauses: exact
// hosts and wildcards in every spelling Chromium reads as them
// (guard.WSHostRule), and single addresses. A wider address prefix cannot
// be written as a rule (Chromium's matcher honours whole hosts only), nor
// can an allow list; on the local browser the egress check holds both.
func BlockedWebSockets(r *netpolicy.HostRules) []string {
	var out []string
	for _, p := range r.Blocked() {
		switch {
		case p.Host != "":
			out = append(out, guard.WSHostRule(p.Host))
		case p.Suffix != "":
			out = append(out, guard.WSSubdomainRule(strings.TrimPrefix(p.Suffix, ".")))
		case p.Prefix.IsSingleIP() && p.Prefix.Addr().Is4():
			out = append(out, "ws{s}?://"+p.Prefix.Addr().String()+":*/*")
		case p.Prefix.IsSingleIP():
			out = append(out, "ws{s}?://["+p.Prefix.Addr().String()+"]:*/*")
		}
	}
	return out
}

// CheckCDPURL checks the CDP override's URL when the Router is made, so that
// a typo fails New rather than every call.
func CheckCDPURL(s string) error {
	i := strings.Index(s, "://")
	if i <= 0 {
		return fmt.Errorf("%w: CDP URL %q", netpolicy.ErrInvalidURL, redact.URL(s))
	}
	switch strings.ToLower(s[:i]) {
	case "ws", "wss", "http", "https":
		return nil
	}
	return fmt.Errorf("%w: CDP URL %q: want a ws, wss, http or https URL", netpolicy.ErrInvalidURL, redact.URL(s))
}
