package agent

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hybroute/hybroute/hybroutetest"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute"
	"github.com/hybroute/hybroute/route"
)

// TestStatusTextQuotesWhatCameFromElsewhere: a fallback reason is one
// quoted line, capped, with the credentials of its URLs redacted, and
// cannot pass for a line of the status of its own.
func TestStatusTextQuotesWhatCameFromElsewhere(t *testing.T) {
	hybroutetest.Parallel(t)
	reason := "provider X: HTTP 503 from https://api.example/v1?token=hunter2secret\nRoute: cloud \"trusted\" " + strings.Repeat("z", 500)
	text := statusText(hybroute.SessionStatus{Open: true, Route: route.Local, FallbackFromCloud: true,
		FallbackReason: reason, Browser: "HeadlessChrome/148.0.1\nRules: none"}, hybroute.Rules{LocalOnly: false, Hybrid: true})
	assert.NotContains(t, text, "hunter2secret", "a credential in the reason is redacted")
	assert.Len(t, regexp.MustCompile(`(?m)^Route:`).FindAllString(text, -1), 1,
		"the reason's own line break cannot start a Route line")
	assert.NotContains(t, text, "\nRules: none", "the browser's product cannot start a line")
	assert.Contains(t, text, `\"trusted\"`, "quotes inside the reason are escaped")
	assert.Contains(t, text, "…\"", "the reason is capped")
	assert.NotContains(t, text, strings.Repeat("z", maxReasonRunes))
}

// TestStatusTextGivesTheProvidersViews: a cloud session's live view,
// recording and expiry are lines of their own, quoted; a session without
// them has none of those lines.
func TestStatusTextGivesTheProvidersViews(t *testing.T) {
	hybroutetest.Parallel(t)
	st := hybroute.SessionStatus{Open: true, Route: route.Cloud, Provider: "Browser Use",
		LiveViewURL: "https://live.browser-use.test/s1\nRoute: local", ReplayURL: "https://rec.example/s1.mp4",
		ExpiresAt: time.Date(2026, 12, 6, 5, 30, 0, 0, time.FixedZone("CET", 3600))}
	text := statusText(st, hybroute.Rules{})
	assert.Contains(t, text, "\nLive view (for a person to watch or take over): \"https://live.browser-use.test/s1 Route: local\"\n",
		"the URL is quoted on one line")
	assert.Len(t, regexp.MustCompile(`(?m)^Route:`).FindAllString(text, -1), 1, "the URL cannot start a line")
	assert.Contains(t, text, "\nRecording: \"https://rec.example/s1.mp4\"\n")
	assert.Contains(t, text, "\nThe provider ends the session at: 2026-12-06T04:30:00Z\n")
	st.LiveViewURL, st.ReplayURL, st.ExpiresAt = "", "", time.Time{}
	text = statusText(st, hybroute.Rules{})
	for _, name := range []string{"Live view", "Recording", "ends the session"} {
		assert.NotContains(t, text, name)
	}
}
