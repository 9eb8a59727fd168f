package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hybroute/hybroute/agent"
	"github.com/hybroute/hybroute/internal/testenv"
)

// TestScriptedAgent runs the demo loop and checks that each step had its
// effect: the click, the search, the exec, the screenshot, the refusal.
func TestScriptedAgent(t *testing.T) {
	testenv.RequireChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shot := filepath.Join(t.TempDir(), "agent.png")
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, shot), out.String())
	s := out.String()
	offered := 0 // the demo's toolset has no directories: the tools that need none
	for _, tool := range agent.Catalog() {
		if tool.Needs == agent.NeedsNothing {
			offered++
		}
	}
	assert.Contains(t, s, fmt.Sprintf("The model is given %d tools:", offered))
	assert.Contains(t, s, `Opened http://localhost:`)
	assert.Contains(t, s, `Result: "Cart: 1 item"`)
	assert.Contains(t, s, `Page: "Results for red shoes"`)
	assert.Contains(t, s, `Result: ["A1"]`)
	assert.Contains(t, s, "← tool error:\n  blocked: http://169.254.169.254/latest/meta-data/iam/security-credentials/ targets a cloud metadata endpoint")
	assert.Contains(t, s, "[warning] 2 results; 1 sold out")
	data, err := os.ReadFile(shot)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, 1280, img.Bounds().Dx())
}
