package netpolicy_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/netpolicy"
)

func TestReasonNames(t *testing.T) {
	t.Parallel()
	for r, want := range map[netpolicy.Reason]string{netpolicy.ReasonMetadata: "metadata", netpolicy.ReasonPrivate: "private",
		netpolicy.ReasonPrivateOnRemote: "private_on_remote", netpolicy.ReasonRedirectToPrivate: "redirect_to_private",
		netpolicy.ReasonInvalidURL: "invalid_url", netpolicy.ReasonSchemeNotAllowed: "scheme_not_allowed", netpolicy.Reason(0): "Reason(0)", netpolicy.Reason(99): "Reason(99)"} {
		assert.Equal(t, want, r.String())
	}
	for r, want := range map[netpolicy.Reason]error{netpolicy.ReasonMetadata: netpolicy.ErrMetadata, netpolicy.ReasonPrivate: netpolicy.ErrPrivate,
		netpolicy.ReasonPrivateOnRemote: netpolicy.ErrPrivate, netpolicy.ReasonRedirectToPrivate: netpolicy.ErrPrivate,
		netpolicy.ReasonInvalidURL: netpolicy.ErrInvalidURL, netpolicy.ReasonSchemeNotAllowed: netpolicy.ErrInvalidURL} {
		assert.ErrorIs(t, &netpolicy.BlockedError{Reason: r}, want, r.String())
	}
}

// TestReasonPhrase: a reason reads as its rule, without the package
// prefix, and an unknown one as an invalid URL (fail closed), in its
// phrase and in what errors.Is finds.
func TestReasonPhrase(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "URL targets a cloud metadata endpoint", netpolicy.ReasonMetadata.Phrase())
	assert.Equal(t, "URL targets a private or internal address", netpolicy.ReasonPrivateNotNamed.Phrase())
	assert.Equal(t, "refused by an operator host rule", netpolicy.ReasonHostBlocked.Phrase())
	assert.Equal(t, "invalid URL", netpolicy.Reason(99).Phrase())
	assert.ErrorIs(t, &netpolicy.BlockedError{Reason: netpolicy.Reason(99)}, netpolicy.ErrInvalidURL)
}

func TestBlockAndReasonOf(t *testing.T) {
	t.Parallel()
	detail := errors.New("the lookup timed out after 1s")
	v := netpolicy.Verdict{URL: "https://user:hunter2@slow.example/?token=s3cret", Class: netpolicy.ClassPublic}
	err := netpolicy.Block(v, netpolicy.ReasonLookupTimeout, detail)
	assert.Equal(t, v.URL, err.URL, "the field keeps the URL as given")
	assert.Equal(t, netpolicy.ClassPublic, err.Class)
	assert.ErrorIs(t, err, netpolicy.ErrLookupTimeout)
	assert.ErrorIs(t, err, detail)
	assert.NotContains(t, err.Error(), "hunter2", "the text redacts the password")
	assert.NotContains(t, err.Error(), "s3cret", "the text redacts the token")
	assert.Contains(t, err.Error(), "hybroute: blocked (lookup_timeout): the lookup of the URL's host timed out: ")
	assert.Equal(t, "lookup_timeout", netpolicy.ReasonOf(fmt.Errorf("call: %w", err)))
	assert.Empty(t, netpolicy.ReasonOf(detail))
	assert.Empty(t, netpolicy.ReasonOf(nil))
}
