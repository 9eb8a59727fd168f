package hybrouteeino

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"
	"github.com/eino-contrib/jsonschema"

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

// Tool is one of the toolset's tools as an Eino tool.InvokableTool.
type Tool struct {
	ts   *agent.Toolset
	info *schema.ToolInfo
	opts Options
}

var _ tool.InvokableTool = (*Tool)(nil)

// Tools are the toolset's tools as Eino tools, in the toolset's order: the
// Tools of a compose.ToolsNodeConfig, and their Info the tools a
// model.ToolCallingChatModel is given.
func Tools(ts *agent.Toolset, opts Options) ([]tool.BaseTool, error) {
	return tools(ts, opts, func(t *Tool) tool.BaseTool { return t })
}

// MultimodalTools are the toolset's tools as Eino
// tool.EnhancedInvokableTools, whose results carry the images (a
// screenshot) after the text, for a model that reads images.
func MultimodalTools(ts *agent.Toolset, opts Options) ([]tool.BaseTool, error) {
	return tools(ts, opts, func(t *Tool) tool.BaseTool { return &MultimodalTool{t: t} })
}

// tools makes an Eino tool of each of the toolset's with wrap.
func tools(ts *agent.Toolset, opts Options, wrap func(*Tool) tool.BaseTool) ([]tool.BaseTool, error) {
	var out []tool.BaseTool
	for _, t := range ts.Tools() {
		var params jsonschema.Schema
		if err := json.Unmarshal(t.InputSchema, &params); err != nil {
			return nil, fmt.Errorf("hybrouteeino: the input schema of %s: %w", t.Name, err)
		}
		out = append(out, wrap(&Tool{ts: ts, opts: opts, info: &schema.ToolInfo{
			Name: t.Name, Desc: t.Description, ParamsOneOf: schema.NewParamsOneOfByJSONSchema(&params)}}))
	}
	return out, nil
}

// Info is the tool's name, description and parameters.
func (t *Tool) Info(context.Context) (*schema.ToolInfo, error) { return t.info, nil }

// InvokableRun runs the tool with its arguments in JSON, in the session
// the context names (see WithSessionKey), and returns the text for the
// model.
func (t *Tool) InvokableRun(ctx context.Context, argumentsInJSON string, _ ...tool.Option) (string, error) {
	res, err := t.call(ctx, argumentsInJSON)
	if err != nil {
		return "", err
	}
	return res.Text, nil
}

// call runs the tool through the toolset.
func (t *Tool) call(ctx context.Context, argumentsInJSON string) (agent.Result, error) {
	if argumentsInJSON == "" {
		argumentsInJSON = "{}"
	}
	if !json.Valid([]byte(argumentsInJSON)) {
		return agent.Result{}, fmt.Errorf("hybrouteeino: %s: the arguments are not JSON: %q", t.info.Name, argumentsInJSON)
	}
	res, err := t.ts.Call(ctx, t.sessionKey(ctx), t.info.Name, json.RawMessage(argumentsInJSON))
	if err != nil {
		return agent.Result{}, fmt.Errorf("hybrouteeino: %s: %w", t.info.Name, err)
	}
	return res, nil
}

// sessionKey is the key ctx carries, else the default.
func (t *Tool) sessionKey(ctx context.Context) string {
	if k, ok := ctx.Value(sessionKeyCtx{}).(string); ok && k != "" {
		return k
	}
	if t.opts.SessionKey != "" {
		return t.opts.SessionKey
	}
	return "default"
}

// MultimodalTool is one of the toolset's tools as an Eino
// tool.EnhancedInvokableTool: its result is the text, then the images.
type MultimodalTool struct {
	t *Tool
}

var _ tool.EnhancedInvokableTool = (*MultimodalTool)(nil)

// Info is the tool's name, description and parameters.
func (m *MultimodalTool) Info(ctx context.Context) (*schema.ToolInfo, error) { return m.t.Info(ctx) }

// InvokableRun runs the tool with its arguments in JSON, in the session
// the context names (see WithSessionKey), and returns the text for the
// model and the images.
func (m *MultimodalTool) InvokableRun(ctx context.Context, arg *schema.ToolArgument, _ ...tool.Option) (*schema.ToolResult, error) {
	var args string
	if arg != nil {
		args = arg.Text
	}
	res, err := m.t.call(ctx, args)
	if err != nil {
		return nil, err
	}
	out := &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: res.Text}}}
	for _, img := range res.Images {
		data := base64.StdEncoding.EncodeToString(img.Data)
		out.Parts = append(out.Parts, schema.ToolOutputPart{Type: schema.ToolPartTypeImage,
			Image: &schema.ToolOutputImage{MessagePartCommon: schema.MessagePartCommon{Base64Data: &data, MIMEType: img.MIMEType}}})
	}
	return out, nil
}
