package mcpserver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/route"
)

// A call that waited for a browser session says how long in its where.
func TestWhereSaysHowLongTheCallWaited(t *testing.T) {
	res := toMCP(agent.Result{Text: "ok", Where: agent.Where{Ran: true, Route: route.Local, WaitedForRoom: 2500 * time.Millisecond}})
	where, ok := res.Meta[MetaWhere].(map[string]any)
	require.True(t, ok)
	assert.EqualValues(t, 2500, where["waited_ms"])
	res = toMCP(agent.Result{Text: "ok", Where: agent.Where{Ran: true, Route: route.Local}})
	assert.NotContains(t, res.Meta[MetaWhere], "waited_ms", "only a call that waited")
}
