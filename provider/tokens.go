package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// tokens is the token source of a client (WithTokenSource) and the last
// token it gave, which error texts must not carry.
type tokens struct {
	source func(context.Context) (string, error)

	mu     sync.Mutex
	latest string
}

// errNoToken is the error of a token source that gave an empty token.
var errNoToken = errors.New("the token source gave an empty token")

// get asks the source for the current token.
func (t *tokens) get(ctx context.Context) (string, error) {
	tok, err := t.source(ctx)
	if err != nil {
		return "", fmt.Errorf("getting the token: %w", err)
	}
	if tok == "" {
		return "", errNoToken
	}
	t.mu.Lock()
	t.latest = tok
	t.mu.Unlock()
	return tok, nil
}

// last is the last token the source gave.
func (t *tokens) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.latest
}
