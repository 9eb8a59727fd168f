package hybroute

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hybroute/hybroute/internal/testlog"
	"github.com/hybroute/hybroute/state"
)

// BenchmarkSessionWithState is the cost of starting a local session with
// a state loaded (one cookie, the local storage of two origins, set in
// stubbed pages of the tab) against one without, each opening one page.
func BenchmarkSessionWithState(b *testing.B) {
	requireChromium(b)
	s := newSite(b)
	r := newRouter(b, nil, &testlog.Buffer{})
	ctx := context.Background() // each call bounds itself: the runs outlast testCtx
	require := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	st := &state.State{
		Cookies: []state.Cookie{{Name: "sid", Value: "v", Domain: publicHost, Path: "/", Expires: -1}},
		Origins: []state.Origin{
			{Origin: s.url(publicHost, ""), LocalStorage: []state.Item{{Name: "a", Value: "1"}}},
			{Origin: s.url(widgetsHost, ""), LocalStorage: []state.Item{{Name: "b", Value: "2"}}},
		},
	}
	page := s.url(publicHost, "/p")
	_, err := r.Navigate(ctx, "warm", page, nil)
	require(err)
	for _, withState := range []bool{false, true} {
		b.Run(fmt.Sprintf("state=%v", withState), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				ctx, cancel := context.WithTimeout(ctx, time.Minute)
				key := fmt.Sprintf("k%v-%d", withState, i)
				if withState {
					require(r.LoadState(ctx, key, st))
				}
				_, err := r.Navigate(ctx, key, page, nil)
				require(err)
				require(r.Release(ctx, key))
				cancel()
			}
		})
	}
}
