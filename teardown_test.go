package hybroute

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hybroute/hybroute/internal/browsertab"
	"github.com/hybroute/hybroute/internal/teardown"
	"github.com/hybroute/hybroute/route"
)

// drop ends a session as every end does: it is marked released, so the
// calls still on it fail with ErrReleased, and its steps run once however
// often it is ended after.
func TestDropMarksTheSessionReleased(t *testing.T) {
	t.Parallel()
	r := newTestRouter(t, nil)
	e := &entry{key: "s", route: route.Cloud, h: browsertab.NewHandle(fakeTab{})}
	ends := 0
	e.ending.Add(teardown.Provider, func(context.Context) error { ends++; return nil })
	r.mu.Lock()
	r.sess.M[e.key] = e
	r.mu.Unlock()

	r.drop(e)
	assert.True(t, e.released.Load())
	r.mu.Lock()
	_, kept := r.sess.M[e.key]
	r.mu.Unlock()
	assert.False(t, kept)
	assert.NoError(t, e.end())
	assert.Equal(t, 1, ends)
}
