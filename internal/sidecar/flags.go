package sidecar

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/chromedp/chromedp"
)

// managedFlags are the flags WithChromiumFlags may not set: a debugging port
// would let any local process drive the browser (and leave chromedp's pipe
// transport), and the profile directory is the sidecar's to make and remove.
// The proxy flags are managed too: every connection of the local browser
// goes through the egress check (internal/egress), and no flag may take it away.
// Extensions stay off and none is loaded: an extension's proxy setting
// outranks the command line's, so one could take the egress check away.
// Site isolation stays on: a flag may not put sites in one process
// (--single-process runs every renderer inside the browser process,
// whatever --site-per-process says).
var managedFlags = []string{"remote-debugging-port", "remote-debugging-address", "remote-debugging-pipe", "user-data-dir",
	"proxy-server", "proxy-bypass-list", "no-proxy-server", "proxy-pac-url", "proxy-auto-detect",
	"disable-quic", "enable-quic", "origin-to-force-quic-on", "webrtc-ip-handling-policy", "force-webrtc-ip-handling-policy",
	"disable-extensions", "load-extension", "disable-extensions-except",
	"site-per-process", "disable-site-isolation-trials", "single-process"}

// proxyBypassList removes Chromium's implicit bypass of localhost and
// loopback literals: they go through the proxy too, the browser-wide one
// and each context's own.
const proxyBypassList = "<-loopback>"

// webRTCPolicy is the WebRTC IP handling policy of the local Chromium: UDP
// only through a proxy, which for an HTTP proxy means no UDP at all.
const webRTCPolicy = "disable_non_proxied_udp"

// profilePrefs holds the WebRTC policy in the profile as well, a second
// layer under the switch (which outranks it): it still holds on a binary
// that ignores the switch. ip_handling_url is pinned empty because a
// per-URL entry there overrides the global policy, the switch included.
const profilePrefs = `{"webrtc":{"ip_handling_policy":"` + webRTCPolicy + `","ip_handling_url":[]}}`

// writeProfilePrefs writes the Preferences file of the temp profile's
// Default profile before Chromium first reads it.
func writeProfilePrefs(dataDir string) error {
	d := filepath.Join(dataDir, "Default")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "Preferences"), []byte(profilePrefs), 0o600)
}

// allocatorOptions are the exec allocator options of the local Chromium,
// whose connections all go through the egress proxy at proxyAddr.
func (s *Sidecar) allocatorOptions(path, proxyAddr string) ([]chromedp.ExecAllocatorOption, error) {
	opts := slices.Clone(chromedp.DefaultExecAllocatorOptions[:])
	opts = append(opts,
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		// Network-quiet: no traffic of Chromium's own (updates, sync,
		// metrics, field trials, safe browsing lists, the secure-time
		// query to clients2.google.com that NetworkTimeServiceQuerying
		// makes at start). What these do not stop is in docs/security.md,
		// Known limits.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,OptimizationHints,MediaRouter,DialMediaRouteProvider,AutofillServerCommunication,CertificateTransparencyComponentUpdater,NetworkTimeServiceQuerying,"+
			// Chromium keeps a spare renderer warm for the browser context
			// that navigated last. Every session here is a browser context
			// of its own, and a renderer never serves another context, so
			// nearly every spare was started only to be thrown away: four
			// renderers per session instead of two, a sixth of the CPU a
			// session costs (docs/load.md).
			"SpareRendererForSitePerProcess,"+
			// Chrome's headless mode still builds the omnibox popup of each
			// browser context as a WebUI page in a renderer of its own,
			// though headless has no omnibox to show it in: one renderer
			// per session and about half the CPU a session costs. Both
			// features are needed, each makes a popup of its own. The
			// toolbar's reload button is WebUI too where it is enabled.
			// Puppeteer turns the same three off.
			"WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIReloadButton"),
		chromedp.Flag("disable-gpu", true),
		// No page comes back from the back-forward cache: a page shown
		// again that way makes no request, so the guard never sees it
		// come back and a grant could not end for it (internal/egress,
		// Leave). Headless shells have no such cache anyway.
		chromedp.Flag("disable-back-forward-cache", true),
		// Every site in a renderer of its own, whatever the build's
		// default: headless shells leave cross-site frames in their
		// parent's process.
		chromedp.Flag("site-per-process", true),
		// The sandbox cannot run as root; everywhere else keep it. An
		// explicit false also stops chromedp from adding it by itself.
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		// Connect-time enforcement: every connection, localhost included
		// (<-loopback> removes the implicit bypass), goes through the
		// egress proxy; nothing over QUIC or non-proxied WebRTC UDP.
		chromedp.Flag("proxy-server", "http://"+proxyAddr),
		chromedp.Flag("proxy-bypass-list", proxyBypassList),
		chromedp.Flag("disable-quic", true),
		// WebRTC may use no UDP that does not go through the proxy (an
		// HTTP proxy carries none): no STUN, no TURN over UDP, no UDP
		// checks to a remote candidate, no host candidates and so no mDNS
		// announcements. TURN over TCP and ICE-TCP still work, as CONNECTs
		// through the egress check. Chrome reads only the first switch
		// (into the profile pref webrtc.ip_handling_policy); content-based
		// shells such as the old headless shell read only the second. The
		// value is exact: any other spelling silently means "default".
		chromedp.Flag("webrtc-ip-handling-policy", webRTCPolicy),
		chromedp.Flag("force-webrtc-ip-handling-policy", webRTCPolicy),
	)
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Flags)) {
		v := s.cfg.Flags[name]
		if !isFlagName(name) {
			// chromedp writes the key verbatim after "--": a key such as
			// "proxy-server=direct://" would smuggle a managed flag past
			// the check below.
			return nil, fmt.Errorf("hybroute: chromium flag %q: a flag name is lower-case letters, digits and dashes", name)
		}
		if slices.Contains(managedFlags, name) {
			return nil, fmt.Errorf("hybroute: chromium flag %q is managed by the sidecar (pipe transport, temp profile, egress proxy) and cannot be set", name)
		}
		switch v.(type) {
		case string, bool:
		default:
			return nil, fmt.Errorf("hybroute: chromium flag %q: the value must be a string or a bool, not %T", name, v)
		}
		opts = append(opts, chromedp.Flag(name, v))
	}
	return opts, nil
}

// isFlagName reports whether name is a plain Chromium switch name.
func isFlagName(name string) bool {
	if name == "" || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
