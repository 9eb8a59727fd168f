package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/internal/toolfuzz"
	"github.com/hybroute/hybroute/internal/toolfuzztest"
	"github.com/hybroute/hybroute/mcpserver"
	"github.com/hybroute/hybroute/mcpserver/mcptest"
)

// overMCP is the toolset as a model's MCP client reaches it: each fuzzed
// session is a client session of the SDK, and releasing one ends the
// client session (as a client that goes away does) and connects a new one.
type overMCP struct {
	t   *testing.T
	srv *mcpserver.Server

	mu      sync.Mutex
	clients map[string]*mcp.ClientSession
	gen     map[string]int // how many times each session was released
}

func (m *overMCP) client(session string) (*mcp.ClientSession, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cs := m.clients[session]
	if cs == nil {
		cs = connect(m.t, m.srv)
		m.clients[session] = cs
	}
	return cs, m.gen[session]
}

// connect connects an SDK client to srv over the in-memory transports.
func connect(t *testing.T, srv *mcpserver.Server) *mcp.ClientSession {
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := srv.Connect(ctx, st)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fuzz-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	return cs
}

func (m *overMCP) Call(ctx context.Context, session, tool string, args json.RawMessage) (toolfuzz.Outcome, error) {
	cs, gen := m.client(session)
	var a any
	if err := json.Unmarshal(args, &a); err != nil {
		return toolfuzz.Outcome{}, err
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	var we *jsonrpc.Error
	if errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams {
		// An unknown tool or arguments its schema refuses: MCP answers
		// these as protocol errors (the spec's "Error Handling"), which
		// the client shows the model.
		return toolfuzz.Outcome{Text: we.Message, IsError: true}, nil
	}
	if err != nil {
		m.mu.Lock()
		released := m.gen[session] != gen
		m.mu.Unlock()
		if released && ctx.Err() == nil {
			return toolfuzz.Outcome{}, fmt.Errorf("%w: %w", toolfuzz.ErrReleased, err)
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", cerr, err)
		}
		return toolfuzz.Outcome{}, err
	}
	return toolfuzz.Outcome{Text: mcptest.TextOf(res), IsError: res.IsError}, nil
}

func (m *overMCP) Release(ctx context.Context, session string) error {
	m.mu.Lock()
	cs := m.clients[session]
	delete(m.clients, session)
	m.gen[session]++
	m.mu.Unlock()
	if cs == nil {
		return nil
	}
	_ = cs.Close() // the server releases the session's browsers when it sees the end
	return nil
}

func (m *overMCP) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, cs := range m.clients {
		_ = cs.Close()
		delete(m.clients, k)
	}
}

// TestToolsetFuzzOverMCP runs the toolset fuzzer over MCP with the SDK's
// client, on two client sessions: the same sequences and invariants as
// TestToolsetFuzz, through the server's handling of cancellations and of
// clients that go away mid-call. HYBROUTE_FUZZ_CALLS and
// HYBROUTE_FUZZ_SEED as there.
func TestToolsetFuzzOverMCP(t *testing.T) {
	seed, calls := toolfuzz.SeedFromEnv(50)
	fmt.Fprintf(os.Stderr, "TestToolsetFuzzOverMCP: seed %d (HYBROUTE_FUZZ_SEED=%d replays it), %d calls\n", seed, seed, calls)
	w := toolfuzztest.New(t)
	srv := mcpserver.New(w.Toolset, mcpserver.Options{})
	m := &overMCP{t: t, srv: srv, clients: map[string]*mcp.ClientSession{}, gen: map[string]int{}}
	rep := toolfuzz.Run(t.Context(), w.Config(seed, calls, "mcp-a", "mcp-b"), m)
	w.End(t, "mcp", rep, func(context.Context) {
		m.closeAll()
		require.NoError(t, srv.Close()) // waits until the sessions' browsers are released
	})
}
