package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
	"github.com/hybroute/hybroute/internal/secrets"
	"github.com/hybroute/hybroute/netpolicy"
	"github.com/hybroute/hybroute/route"
	"github.com/hybroute/hybroute/state"
)

// Secrets the model never sees (docs/security.md): browser_type_secret
// types a named secret into a field on a page of an origin the secret is
// bound to, in a browser its origins may use. No result, file or log line
// of the toolset holds a secret's value (Toolset.Call scrubs every result
// on its way out; the state and snapshot files, and the toolset's log, are
// scrubbed as they are written), and browser_exec is refused on a document
// that holds a typed secret
// (docs/decisions/2026-12-06-a-page-that-holds-a-secret-runs-no-exec.md).

// ToolTypeSecret is the tool's name.
const ToolTypeSecret = "browser_type_secret"

var secretTools = []toolDef{
	{
		name:   ToolTypeSecret,
		desc:   "Type the operator's secret name (a password) into the field ref; you never see its value. Only on the secret's sites, into a text-like field; browser_exec is then off on that page until it navigates.",
		schema: `{"type":"object","properties":{"ref":{"type":"string"},"name":{"type":"string"},"submit":{"type":"boolean","description":"Press Enter after"}},"required":["ref","name"]}`,
		run:    (*Toolset).typeSecret,
	},
}

// Secret is one named secret and the origins where it may be typed. Its
// String, GoString and LogValue hide the value.
type Secret struct {
	Name  string
	Value string
	// Origins are the exact origins (scheme://host[:port], http or https)
	// of the pages the secret may be typed on: the origin of the frame
	// that holds the field.
	Origins []string
	// LocalOnly keeps the secret off remote browsers even when its
	// origins are public. A secret with a private origin (a private
	// address, a name that resolves to one, localhost) is typed only in
	// the local browser anyway.
	LocalOnly bool
}

func (s Secret) String() string { return secrets.Secret(s).String() }

// GoString is String, so %#v hides the value too.
func (s Secret) GoString() string { return s.String() }

// LogValue logs the name and origins only.
func (s Secret) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", s.Name), slog.Any("origins", s.Origins))
}

// Secrets is a checked set of secrets for [WithSecrets].
type Secrets struct{ set *secrets.Set }

// NewSecrets checks ss: plain unique names (letters, digits, '.', '_',
// '-'), values of at least four bytes, each bound to at least one http or
// https origin.
func NewSecrets(ss ...Secret) (*Secrets, error) {
	in := make([]secrets.Secret, len(ss))
	for i, s := range ss {
		in[i] = secrets.Secret(s)
	}
	set, err := secrets.New(in...)
	if err != nil {
		return nil, err
	}
	return &Secrets{set: set}, nil
}

// LoadSecrets reads a secrets file (the format of hybroute mcp --secrets,
// in docs/security.md): a JSON object of secrets by name, each with a
// "value" or the name of an environment variable that holds it ("env"),
// its "origins", and "local_only". A file that others than its owner may
// read or write is refused.
func LoadSecrets(path string, getenv func(string) string) (*Secrets, error) {
	ss, err := secrets.Load(path, getenv)
	if err != nil {
		return nil, err
	}
	set, err := secrets.New(ss...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Secrets{set: set}, nil
}

// Names lists the secrets' names.
func (s *Secrets) Names() []string {
	if s == nil {
		return nil
	}
	return s.set.Names()
}

// LogHandler returns h with the secrets scrubbed from every record, in the
// spellings the toolset scrubs from results: wrap the Router's logger
// with it (hybroute.WithLogger), as the toolset wraps its own.
func (s *Secrets) LogHandler(h slog.Handler) slog.Handler {
	if s == nil {
		return h
	}
	return s.set.Handler(h)
}

// WithSecrets gives the toolset secrets to type with browser_type_secret,
// which it offers only then.
func WithSecrets(s *Secrets) Option {
	return func(c *config) {
		if s != nil {
			c.secrets = s.set
		}
	}
}

// scrub is res with the secrets scrubbed from everything a caller reads:
// its text and where it ran (the page's URL and title, dialogs).
func (t *Toolset) scrub(res Result) Result {
	set := t.cfg.secrets
	if set.Len() == 0 {
		return res
	}
	res.Text = set.Scrub(res.Text)
	w := &res.Where
	w.URL, w.Title, w.FallbackReason = set.Scrub(w.URL), set.Scrub(w.Title), set.Scrub(w.FallbackReason)
	if len(w.Dialogs) > 0 {
		w.Dialogs = slices.Clone(w.Dialogs)
		for i := range w.Dialogs {
			w.Dialogs[i].Message = set.Scrub(w.Dialogs[i].Message)
			w.Dialogs[i].DefaultPrompt = set.Scrub(w.Dialogs[i].DefaultPrompt)
		}
	}
	return res
}

// heldSecrets are the history entries of a session's tabs whose page had
// a secret typed into it. An entry, not a document: going back to it, or
// reloading it, brings the browser's saved form values back in a new
// document. An entry stays held until its tab closes.
type heldSecrets struct {
	mu      sync.Mutex
	entries map[target.ID]map[int64]bool
	// showing: the tab's current entry, as last seen, is held (for a
	// call on another tab, which does not ask this one).
	showing map[target.ID]bool
}

func (h *heldSecrets) hold(tab target.ID, entry int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.entries == nil {
		h.entries, h.showing = map[target.ID]map[int64]bool{}, map[target.ID]bool{}
	}
	if h.entries[tab] == nil {
		h.entries[tab] = map[int64]bool{}
	}
	h.entries[tab][entry], h.showing[tab] = true, true
}

// currentEntry is the id of the tab's current history entry.
func currentEntry(ctx context.Context) (int64, error) {
	h, err := chromedp.Call(ctx, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return 0, err
	}
	if h.CurrentIndex < 0 || h.CurrentIndex >= int64(len(h.Entries)) {
		return 0, fmt.Errorf("the tab's history has no current entry")
	}
	return h.Entries[h.CurrentIndex].ID, nil
}

// refuseExec refuses browser_exec while a tab of the session shows the
// document a secret was typed into: a script reads a field's value, and
// may encode it past any scrubbing. The call's own tab is asked for its
// document (a new one lets exec run again); another tab of the session
// counts while it is open, as a page may reach its opener's document.
func (h *heldSecrets) refuseExec(ctx context.Context, s *session, c *call) error {
	return h.refuse(ctx, s, c, "browser_exec", "a script could read it back", true)
}

// refuseFind refuses a snapshot's find on the document a secret was
// typed into: whether a field's value contains a text would tell the
// value a piece at a time.
func (h *heldSecrets) refuseFind(ctx context.Context, s *session, c *call) error {
	return h.refuse(ctx, s, c, "find", "a search of the page's fields would tell it a piece at a time", false)
}

// refuseImage refuses a picture (a screenshot, a PDF) of the page a
// secret was typed into: a text field shows what it holds, and an image
// is past any scrubbing. The record stops filming that tab for the same
// reason (record.go).
func (h *heldSecrets) refuseImage(ctx context.Context, s *session, c *call, tool string) error {
	return h.refuse(ctx, s, c, tool, "a picture of the page would show what a text field holds", false)
}

// refuse is the check of refuseExec, refuseFind and refuseImage: what is the refused
// tool or option and why the text the model reads; others says whether
// another open tab that holds a secret counts.
func (h *heldSecrets) refuse(ctx context.Context, s *session, c *call, what, why string, others bool) error {
	h.mu.Lock()
	n := len(h.entries)
	h.mu.Unlock()
	if n == 0 {
		return nil
	}
	entry, err := currentEntry(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	held := h.entries[c.target][entry]
	if _, seen := h.entries[c.target]; seen {
		h.showing[c.target] = held
	}
	if held {
		return modeltext.Errorf("%s is off on this page: a secret was typed into it, and %s. Navigate to another page first (a submitted login usually does), or read the page with browser_snapshot", what, why)
	}
	if !others {
		return nil
	}
	for tab, showing := range h.showing {
		if tab == c.target || !showing {
			continue
		}
		s.tmu.Lock()
		_, open := s.tabs[tab]
		s.tmu.Unlock()
		if !open {
			delete(h.entries, tab)
			delete(h.showing, tab)
			continue
		}
		return modeltext.Errorf("%s is off: another tab of this session (%s) shows a page a secret was typed into, which a script of this page could reach. Select that tab and navigate it elsewhere, or close it (browser_tabs)", what, s.names.name(string(tab)))
	}
	return nil
}

// secretFieldTypes are the input types a secret may be typed into (a
// missing type is text).
var secretFieldTypes = []string{"", "text", "password", "email", "tel", "url", "search"}

// originJS reads the origin of the field's frame. It runs in the main
// world of the frame that holds the node (DOM.resolveNode's), where
// location is unforgeable: a page can redefine what a node says of its
// document, not where its own window is.
const originJS = `function() { return location.origin; }`

func (t *Toolset) typeSecret(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Ref    string `json:"ref"`
		Name   string `json:"name"`
		Submit bool   `json:"submit"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	sec, ok := t.cfg.secrets.Get(a.Name)
	if !ok {
		return toolError(fmt.Sprintf("there is no secret %s; the secrets are %s", modeltext.Quote(a.Name, 80), strings.Join(t.cfg.secrets.Names(), ", ")))
	}
	var what, changes string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		if c.h.Route() != route.Local && t.keptLocal(ctx, c, sec) {
			return modeltext.Errorf("the secret %s is typed only in the local browser (its origin is private, or the operator keeps it local), and this page is in the cloud browser", modeltext.Quote(sec.Name, 80))
		}
		e, err := s.refs.Resolve(ctx, a.Ref, c.target)
		if err != nil {
			return err
		}
		what = describeRef(a.Ref, e)
		nctx, node := e.In(ctx), e.Node()
		if err := secretField(nctx, a.Ref, node); err != nil {
			return err
		}
		origin, err := frameOrigin(nctx, a.Ref, node)
		if err != nil {
			return err
		}
		if !sec.Binds(origin) {
			return modeltext.Errorf("the secret %s may not be typed on this page: the field's frame is of origin %s, and the secret is bound to %s", modeltext.Quote(sec.Name, 80), modeltext.Quote(origin, 200), strings.Join(sec.Origins, ", "))
		}
		entry, err := currentEntry(ctx)
		if err != nil {
			return err
		}
		// Held before the value reaches the page: a failure half-way
		// leaves exec off, not on.
		s.secrets.hold(c.target, entry)
		if _, _, err := nodeCenter(nctx, a.Ref, node); err != nil {
			return err // no box: a field hidden from a person takes no secret
		}
		if err := typeInto(nctx, a.Ref, node, sec.Value); err != nil {
			return err
		}
		if a.Submit {
			if err := settled(ctx, c, &navigated, func() error { return pressKeys(ctx, "Enter") }); err != nil || navigated {
				return err
			}
		}
		changes = t.changesAfter(ctx, s, c, "")
		return nil
	})
	return t.finishCall(s, key, res, c, err, func() string {
		msg := fmt.Sprintf("Typed the secret %s into %s.", modeltext.Quote(sec.Name, 80), what)
		if a.Submit {
			msg += " Pressed Enter."
		}
		return msg + navNote(navigated) + changesNote(changes)
	})
}

// keptLocal reports whether sec stays on the local browser: the operator
// said so, or one of its origins is not public as the Router classifies
// it (a private address, a name that resolves to one, localhost).
func (t *Toolset) keptLocal(ctx context.Context, c *call, sec secrets.Secret) bool {
	if sec.LocalOnly {
		return true
	}
	for _, o := range sec.Origins {
		if c.h.Class(ctx, o) != netpolicy.ClassPublic {
			return true
		}
	}
	return false
}

// secretField refuses a node a secret must not go into: anything but an
// enabled, writable text-like input or a text area, as the DOM has it (not
// as a page's script may describe it).
func secretField(ctx context.Context, ref string, node cdp.BackendNodeID) error {
	n, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: node})
	if err != nil {
		return snapshot.StaleNode(ref, err)
	}
	if n.Node == nil {
		return snapshot.StaleNode(ref, fmt.Errorf("no node"))
	}
	attrs := map[string]string{}
	for i := 0; i+1 < len(n.Node.Attributes); i += 2 {
		attrs[strings.ToLower(n.Node.Attributes[i])] = n.Node.Attributes[i+1]
	}
	_, disabled := attrs["disabled"]
	_, readonly := attrs["readonly"]
	typ := strings.ToLower(strings.TrimSpace(attrs["type"]))
	switch name := strings.ToLower(n.Node.LocalName); {
	case name == "input" && slices.Contains(secretFieldTypes, typ), name == "textarea":
		if disabled || readonly {
			return modeltext.Errorf("the field %s is disabled or read-only", ref)
		}
		return nil
	}
	return modeltext.Errorf("a secret goes only into a text, password or email field or a text area, and %s is not one", ref)
}

// frameOrigin is the origin of the frame that holds the node.
func frameOrigin(ctx context.Context, ref string, node cdp.BackendNodeID) (string, error) {
	var origin string
	if err := callOnNode(ctx, ref, node, originJS, &origin); err != nil || origin == "" {
		return "", modeltext.Errorf("the origin of the frame that holds %s cannot be read; take a new snapshot", ref)
	}
	return origin, nil
}

// scrubState is st with the secrets scrubbed from its cookies and storage,
// as a state file is written: a page may keep what it was given.
func (t *Toolset) scrubState(st *state.State) *state.State {
	set := t.cfg.secrets
	if set.Len() == 0 || st == nil {
		return st
	}
	out := &state.State{Cookies: slices.Clone(st.Cookies), Origins: slices.Clone(st.Origins)}
	for i := range out.Cookies {
		out.Cookies[i].Name, out.Cookies[i].Value = set.Scrub(out.Cookies[i].Name), set.Scrub(out.Cookies[i].Value)
	}
	items := func(xs []state.Item) []state.Item {
		xs = slices.Clone(xs)
		for i := range xs {
			xs[i].Name, xs[i].Value = set.Scrub(xs[i].Name), set.Scrub(xs[i].Value)
		}
		return xs
	}
	for i := range out.Origins {
		out.Origins[i].LocalStorage = items(out.Origins[i].LocalStorage)
		out.Origins[i].SessionStorage = items(out.Origins[i].SessionStorage)
	}
	return out
}
