package statesync

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/route"
)

// TestSaveLetsEverySessionGo: the live sessions of a key were each held
// for their lend; a save that fails on the first still lends (and so lets
// go) the others, rather than leave them held, never reaped.
func TestSaveLetsEverySessionGo(t *testing.T) {
	k := &Keeper{MayHold: func(context.Context, string, route.Route) bool { return true }}
	broken := errors.New("no CDP")
	var let []string
	lend := func(key string, w route.Route, err error) Lend {
		return func(fn func(Session) error) error {
			defer func() { let = append(let, key) }()
			return fn(Session{Key: key, Route: w, Browser: func(context.Context) (Browser, error) { return Browser{}, err }})
		}
	}
	_, err := k.Save(t.Context(), "k", func() []Lend {
		return []Lend{lend("k", route.Cloud, broken), lend("k::local", route.Local, broken)}
	})
	require.ErrorIs(t, err, broken)
	assert.Equal(t, []string{"k", "k::local"}, let, "the session after the failing one was let go too")
}
