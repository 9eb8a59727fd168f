package browsertab

import (
	"testing"

	"github.com/chromedp/cdproto/target"
	"github.com/stretchr/testify/assert"
)

func TestOrderFrontFirst(t *testing.T) {
	others := map[target.ID]string{"c": "", "a": "", "b": ""}
	assert.Equal(t, []target.ID{"z", "a", "b", "c"}, Order("z", others))
	assert.Equal(t, []target.ID{"a", "b", "c"}, Order("", others), "no front: the others in id order")
	assert.Empty(t, Order[string]("", nil))
}

func TestDescribeTrimsTitle(t *testing.T) {
	u, title := Describe(&target.Info{URL: "https://a.example/", Title: "  A \n"})
	assert.Equal(t, "https://a.example/", u)
	assert.Equal(t, "A", title)
	u, title = Describe(nil)
	assert.Empty(t, u+title)
}
