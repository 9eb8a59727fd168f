package hybroutegenkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	"github.com/hybroute/hybroute/agent"
)

// Options configure the tools.
type Options struct {
	// SessionKey is the browser session the tools run in when the
	// context carries none. Empty: "default".
	SessionKey string
}

type sessionKeyCtx struct{}

// WithSessionKey is ctx with the browser session key the tools run in: give
// each conversation (or user) a key of its own, and its pages stay its own.
func WithSessionKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, sessionKeyCtx{}, key)
}

// sessionKey is the key ctx carries, else the default.
func (o Options) sessionKey(ctx context.Context) string {
	if k, ok := ctx.Value(sessionKeyCtx{}).(string); ok && k != "" {
		return k
	}
	if o.SessionKey != "" {
		return o.SessionKey
	}
	return "default"
}

// Tools are the toolset's tools as Genkit tools, not registered with any
// Genkit instance: pass them to genkit.Generate with ai.WithTools.
func Tools(ts *agent.Toolset, opts Options) ([]ai.Tool, error) {
	return tools(ts, opts, func(name, desc string, fn ai.MultipartToolFunc[any], schema map[string]any) ai.Tool {
		return ai.NewMultipartTool(name, desc, fn, ai.WithInputSchema(schema))
	})
}

// Define registers the toolset's tools with g, so that prompts and the
// developer UI find them by name, and returns them.
func Define(g *genkit.Genkit, ts *agent.Toolset, opts Options) ([]ai.Tool, error) {
	return tools(ts, opts, func(name, desc string, fn ai.MultipartToolFunc[any], schema map[string]any) ai.Tool {
		return genkit.DefineMultipartTool(g, name, desc, fn, ai.WithInputSchema(schema))
	})
}

// tools makes a Genkit tool of each of the toolset's with newTool.
func tools(ts *agent.Toolset, opts Options, newTool func(name, desc string, fn ai.MultipartToolFunc[any], schema map[string]any) ai.Tool) ([]ai.Tool, error) {
	var out []ai.Tool
	for _, t := range ts.Tools() {
		var schema map[string]any
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("hybroutegenkit: the input schema of %s: %w", t.Name, err)
		}
		name := t.Name
		out = append(out, newTool(name, t.Description, func(tc *ai.ToolContext, input any) (*ai.MultipartToolResponse, error) {
			return call(tc, ts, opts.sessionKey(tc), name, input)
		}, schema))
	}
	return out, nil
}

// call runs one tool call through the toolset.
func call(ctx context.Context, ts *agent.Toolset, key, name string, input any) (*ai.MultipartToolResponse, error) {
	if input == nil {
		input = map[string]any{}
	}
	args, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("hybroutegenkit: %s: the arguments: %w", name, err)
	}
	res, err := ts.Call(ctx, key, name, args)
	if err != nil {
		return nil, fmt.Errorf("hybroutegenkit: %s: %w", name, err)
	}
	out := &ai.MultipartToolResponse{Output: res.Text}
	for _, img := range res.Images {
		out.Content = append(out.Content, ai.NewMediaPart(img.MIMEType,
			"data:"+img.MIMEType+";base64,"+base64.StdEncoding.EncodeToString(img.Data)))
	}
	return out, nil
}
