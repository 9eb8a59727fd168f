package agent

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/internal/redact"
	"github.com/hybroute/hybroute/route"
)

// ToolStatus is the tool that tells the client where its session runs and
// under which rules.
const ToolStatus = "browser_status"

var statusTools = []toolDef{{
	name:   ToolStatus,
	desc:   "Where this session's browser runs (route, provider, fallback, version) and the rules in force, without opening anything.",
	schema: noArgs,
	run:    (*Toolset).status,
}}

// status reports without a browser call: the session's browser session is
// neither made nor touched.
func (t *Toolset) status(ctx context.Context, _ *session, key string, args json.RawMessage) Result {
	if err := decode(args, &struct{}{}); err != nil {
		return argError(err)
	}
	st, err := t.r.Status(ctx, key)
	if err != nil {
		return toolError(describe(err, nil, key))
	}
	return Result{Text: statusText(st, t.r.Rules())}
}

// maxReasonRunes caps a fallback's reason as the tool shows it.
const maxReasonRunes = 300

// statusText is the tool's answer: one "name: value" line each. What came
// from elsewhere (the reason, the browser's product) is quoted as data.
func statusText(st hybroute.SessionStatus, r hybroute.Rules) string {
	var b strings.Builder
	line := func(name, value string) { b.WriteString(name + ": " + value + "\n") }
	switch {
	case !st.Open:
		line("Route", "none yet (no browser session is open: the next browser call opens one)")
	case st.Route == route.Local:
		line("Route", "local (Chromium on this machine)")
	default:
		line("Route", "cloud")
	}
	line("Provider", orText(st.Provider, "none (every call runs on the local browser)"))
	if st.Open {
		fell := "no"
		if st.FallbackFromCloud {
			fell = "yes, the cloud provider could not give this session a browser"
			if st.FallbackReason != "" {
				fell += "; reason: " + modeltext.Quote(redactText(st.FallbackReason), maxReasonRunes)
			}
		}
		line("Fell back to the local browser", fell)
		line("Browser", orText(quoteIf(st.Browser), "unknown (this browser has no DevTools protocol)"))
		line("Persistent profile", yesNo(st.Profile))
		if st.LiveViewURL != "" {
			line("Live view (for a person to watch or take over)", modeltext.Quote(st.LiveViewURL, 500))
		}
		if st.ReplayURL != "" {
			line("Recording", modeltext.Quote(st.ReplayURL, 500))
		}
		if !st.ExpiresAt.IsZero() {
			line("The provider ends the session at", st.ExpiresAt.UTC().Format(time.RFC3339))
		}
	}
	b.WriteString("Rules:\n")
	line("- Routing", routing(r))
	line("- Cloud metadata addresses", "always refused")
	line("- Private addresses", privateRule(r))
	if !r.LocalOnly {
		secrets := "kept off the cloud browser"
		if r.SecretsInURLsRemote {
			secrets = "allowed on the cloud browser"
		}
		line("- URLs that carry a credential", secrets)
		webrtc := "off (no RTCPeerConnection, and window.open gives a page no handle to its popup)"
		if r.CloudWebRTC {
			webrtc = "on: a page's peer connections reach any address it names, cloud metadata included"
		}
		line("- WebRTC in cloud pages", webrtc)
	}
	line("- Allowed hosts", orText(hostList(r.AllowedHosts), "any the rules above allow"))
	line("- Blocked hosts", orText(hostList(r.BlockedHosts), "none beyond the rules above"))
	if len(r.AllowedSchemes) > 0 {
		line("- Extra schemes (local browser only)", hostList(r.AllowedSchemes))
	}
	line("- JavaScript dialogs", dialogRule(r.Dialogs))
	if !r.LocalOnly && !r.CDPOverride {
		line("- Fallback to the local browser when the provider fails", onOff(r.Fallback))
	}
	line("- Persistent local profiles", onOff(r.PersistentProfiles))
	return strings.TrimSuffix(b.String(), "\n")
}

func routing(r hybroute.Rules) string {
	switch {
	case r.LocalOnly:
		return "local only: every URL opens in the local browser"
	case r.CDPOverride:
		return "one remote browser (a CDP endpoint) for every URL"
	case r.Hybrid:
		return "hybrid: public sites open in the cloud browser; private addresses and URLs that carry a credential in the local browser"
	}
	return "cloud only: every URL opens in the cloud browser"
}

func privateRule(r hybroute.Rules) string {
	switch {
	case r.PrivateURLsLocal && r.PrivateURLsRemote:
		return "allowed on the local and the remote browser"
	case r.PrivateURLsRemote:
		return "allowed on the remote browser"
	case r.PrivateURLsLocal:
		return "local browser only"
	}
	return "refused"
}

func dialogRule(p hybroute.DialogPolicy) string {
	s := "alert, confirm and prompt dismissed"
	switch {
	case p.Hold:
		s = "alert, confirm and prompt wait for your answer (browser_handle_dialog)"
	case p.Accept:
		s = "alert, confirm and prompt accepted"
		if p.PromptText != "" {
			s += " (a prompt answers " + modeltext.Quote(p.PromptText, 80) + ")"
		}
	}
	if p.KeepPageOnBeforeUnload {
		return s + "; a page that asks before it is left stays"
	}
	return s + "; a page that asks before it is left is left"
}

// hostList shows an operator's list, each pattern quoted.
func hostList(hs []string) string {
	q := make([]string, len(hs))
	for i, h := range hs {
		q[i] = modeltext.Quote(h, 200)
	}
	return strings.Join(q, ", ")
}

// redactText redacts the credentials of every URL in free text (a
// provider's words may carry one).
func redactText(s string) string {
	fs := strings.Fields(s)
	for i, f := range fs {
		if strings.Contains(f, "://") {
			fs[i] = redact.Display(f)
		}
	}
	return strings.Join(fs, " ")
}

func quoteIf(s string) string {
	if s == "" {
		return ""
	}
	return modeltext.Quote(s, 100)
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
