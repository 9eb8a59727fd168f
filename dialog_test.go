package hybroute

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/testlog"
)

// dialogPages adds /leave, a page that asks before it is left.
func dialogPages(mux *http.ServeMux, _ *site) {
	mux.HandleFunc("/leave", staticPage("leave"))
}

// evalString runs expr in the tab and returns its string value.
func evalString(ctx context.Context, expr string) (string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[string](expr))
}

// Every JavaScript dialog is answered as it opens, dismissed by default and
// accepted under WithDialogPolicy, and reported in the call's Result; a
// page that asks before it is left does not wedge the next navigation.
func TestDialogsAreAnsweredAndReported(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	s := newSite(t, dialogPages)
	long := strings.Repeat("x", 3*MaxDialogMessage)
	for _, tc := range []struct {
		name   string
		policy DialogPolicy
		want   string
	}{
		{"dismiss", DialogPolicy{}, "undefined|false|null"},
		{"accept", DialogPolicy{Accept: true, PromptText: "typed"}, "undefined|true|typed"},
		{"keep the page", DialogPolicy{KeepPageOnBeforeUnload: true}, "undefined|false|null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRouter(t, nil, &testlog.Buffer{}, WithDialogPolicy(tc.policy))
			ctx := testCtx(t)
			var got string
			res, err := r.Exec(ctx, "d", "", func(ctx context.Context, call *Call) (err error) {
				got, err = evalString(ctx, `[alert("hello"), confirm("sure?"), prompt("name?", "def"), alert("`+long+`")].map(String).slice(0, 3).join("|")`)
				return err
			})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			require.Len(t, res.Dialogs, 4)
			assert.Equal(t, Dialog{Type: "alert", Message: "hello", Accepted: tc.policy.Accept}, res.Dialogs[0])
			assert.Equal(t, Dialog{Type: "confirm", Message: "sure?", Accepted: tc.policy.Accept}, res.Dialogs[1])
			assert.Equal(t, Dialog{Type: "prompt", Message: "name?", Accepted: tc.policy.Accept}, res.Dialogs[2])
			assert.LessOrEqual(t, len(res.Dialogs[3].Message), MaxDialogMessage, "a message is bounded")
			assert.Contains(t, res.Dialogs[3].Message, "[3072 bytes]", "with its real length")

			res, err = r.Exec(ctx, "d", "", func(ctx context.Context, call *Call) error { return nil })
			require.NoError(t, err)
			assert.Empty(t, res.Dialogs, "a dialog is reported once")

			// beforeunload: the page asks (it had a user gesture), the
			// router answers, and navigating on works.
			_, err = r.Navigate(ctx, "d", s.URL+"/leave", nil)
			require.NoError(t, err)
			_, err = r.Exec(ctx, "d", "", func(ctx context.Context, call *Call) error {
				return chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#b")))
			})
			require.NoError(t, err)
			res, err = r.Navigate(ctx, "d", s.URL+"/after", nil)
			require.NotEmpty(t, res.Dialogs)
			assert.Equal(t, Dialog{Type: "beforeunload", Accepted: !tc.policy.KeepPageOnBeforeUnload}, res.Dialogs[0])
			if tc.policy.KeepPageOnBeforeUnload {
				require.Error(t, err, "the page stayed: the navigation was cancelled")
				var title string
				res, err = r.Exec(ctx, "d", "", func(ctx context.Context, call *Call) (err error) {
					title, err = pageTitle(ctx)
					return err
				})
				require.NoError(t, err, "the tab answers")
				assert.Equal(t, "leave", title)
				return
			}
			require.NoError(t, err, "the navigation after a beforeunload page works")
			assert.Equal(t, s.URL+"/after", res.LandedURL)
			res, err = r.Navigate(ctx, "d", s.URL+"/after2", nil)
			require.NoError(t, err)
			assert.Equal(t, s.URL+"/after2", res.LandedURL)
		})
	}
}
