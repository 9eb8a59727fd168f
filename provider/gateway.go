package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The managed gateway (--provider nous): Browser Use's browser sessions
// bought through a gateway that bills them to the user's subscription.
// What it takes and answers follows the gateway's existing clients (a
// browser_use provider in managed mode): the gateway origin serves
// POST {origin}/browsers and PATCH {origin}/browsers/{id} with the user's
// token in X-Browser-Use-API-Key; each create carries an X-Idempotency-Key,
// and a create the gateway is still working on answers 409 with
// {"error":{"message":"... already in progress"}}; a created session's
// answer carries the x-external-call-id header, the gateway's receipt of
// the call. Sessions are kept short (timeout 5 minutes, proxy country
// "us"), as those clients keep them, so that billing does not authorize a
// long session, and each request gets 30 s.

// externalCallIDHeader is the gateway's receipt of a call.
const externalCallIDHeader = "X-External-Call-Id"

// idempotencyHeader carries the key of one create, kept across its retries.
const idempotencyHeader = "X-Idempotency-Key"

// The gateway's defaults.
const (
	gatewayTimeout        = 30 * time.Second // one request
	gatewaySessionMinutes = 5                // the session's "timeout"
	gatewayProxyCountry   = "us"
	// gatewayCreateAttempts bounds the tries of one CreateSession: the
	// first, and retries with the same key while the gateway answers 5xx,
	// nothing, or 409 in progress.
	gatewayCreateAttempts = 3
)

// DefaultGatewayDomain is the domain of the managed gateway's default
// origin when none is named.
const DefaultGatewayDomain = "nousresearch.com"

// GatewayOrigin is the managed gateway's origin under domain, as
// hermes-agent builds it (tools/managed_tool_gateway.py):
// https://browser-use-gateway.<domain>, the domain [DefaultGatewayDomain]
// when empty (what TOOL_GATEWAY_DOMAIN names).
func GatewayOrigin(domain string) string {
	domain = strings.Trim(strings.TrimSpace(domain), ".")
	if domain == "" {
		domain = DefaultGatewayDomain
	}
	return "https://browser-use-gateway." + domain
}

// NewBrowserUseGateway returns a [BrowserUse] client of the managed gateway
// at origin (e.g. https://gateway.example.com; empty: [GatewayOrigin] of
// the default domain), authenticated with the user's token, or with the
// tokens of [WithTokenSource], which refreshes one that expires (the
// user's OAuth access token, which hermes-agent refreshes 120 s before
// its expiry). It is named "nous" in logs; its requests time out after
// 30 s and its sessions after 5 minutes ([WithBrowserUseSession] or
// [WithSessionParams] change that), with a US proxy.
//
// Each create carries an idempotency key, one per session key: kept while
// the gateway answers 5xx, nothing at all, or 409 "in progress" (the
// create may have happened: a retry with the same key gets the same
// session, not a second paid one), and dropped after a success or a
// refusal a retry cannot mend. CreateSession itself retries such an answer
// up to twice, within its context; a later CreateSession for the same key
// reuses the kept key.
func NewBrowserUseGateway(origin, userToken string, opts ...Option) *BrowserUse {
	opts = append([]Option{WithName("nous"), func(c *config) { c.timeout = gatewayTimeout }}, opts...)
	if strings.TrimSpace(origin) == "" {
		origin = GatewayOrigin("")
	}
	return &BrowserUse{
		apiClient: newAPIClient(origin, "nous", "X-Browser-Use-API-Key", userToken, opts),
		defaults:  map[string]any{"timeout": gatewaySessionMinutes, "proxyCountryCode": gatewayProxyCountry},
		gateway:   &gatewayCreates{keys: map[string]string{}},
	}
}

// gatewayCreates keeps the idempotency key of each session key's create
// until it is settled.
type gatewayCreates struct {
	mu   sync.Mutex
	keys map[string]string // session key -> pending idempotency key
	// wait is how long to wait before retry n (0-based) when the answer
	// names no Retry-After; tests shorten it.
	wait func(n int) time.Duration
}

// pending returns the session key's idempotency key, making one if none is
// kept.
func (g *gatewayCreates) pending(key string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if k, ok := g.keys[key]; ok {
		return k
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	k := "hybroute-create-" + hex.EncodeToString(b[:])
	g.keys[key] = k
	return k
}

func (g *gatewayCreates) settle(key string) {
	g.mu.Lock()
	delete(g.keys, key)
	g.mu.Unlock()
}

// kept reports the idempotency key kept for a session key, if any.
func (g *gatewayCreates) kept(key string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	k, ok := g.keys[key]
	return k, ok
}

// create runs send with the session key's idempotency key until it
// succeeds, fails for good, or its tries or ctx run out.
func (g *gatewayCreates) create(ctx context.Context, key string, send func(extra http.Header) (http.Header, error)) (http.Header, error) {
	idem := g.pending(key)
	extra := http.Header{idempotencyHeader: {idem}}
	for n := 0; ; n++ {
		hdr, err := send(extra)
		if err == nil {
			g.settle(key)
			return hdr, nil
		}
		if !keepsIdempotencyKey(err) {
			g.settle(key)
			return hdr, err
		}
		if n+1 >= gatewayCreateAttempts || ctx.Err() != nil {
			return hdr, err // the key is kept for the next CreateSession
		}
		d := g.retryWait(n, err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return hdr, err
		case <-t.C:
		}
	}
}

// retryWait is the pause before retry n: the answer's Retry-After when it
// gave one (at most 5 s), else 250 ms doubling.
func (g *gatewayCreates) retryWait(n int, err error) time.Duration {
	var pe *Error
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		return min(pe.RetryAfter, 5*time.Second)
	}
	if g.wait != nil {
		return g.wait(n)
	}
	return 250 * time.Millisecond << n
}

// keepsIdempotencyKey reports a failed create that a retry with the same
// key may settle: no answer (the create may have reached the gateway), a
// 5xx, or a 409 saying the create is in progress. Any other refusal
// (auth, payment, a bad request) will not mend by retrying.
func keepsIdempotencyKey(err error) bool {
	var pe *Error
	if !errors.As(err, &pe) {
		return false
	}
	switch {
	case pe.Status == 0 || pe.Status >= 500:
		return true
	case pe.Status == http.StatusConflict:
		return inProgress(pe)
	}
	return false
}

// inProgress reports a 409 that says the first create is still running
// ({"error":{"message":"... already in progress"}}, or a code saying so).
func inProgress(pe *Error) bool {
	text := strings.ToLower(pe.Code + " " + pe.Message)
	return strings.Contains(text, "in progress") || strings.Contains(text, "in_progress")
}
