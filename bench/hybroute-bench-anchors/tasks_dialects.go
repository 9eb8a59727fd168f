package main

// A dialect is how a scripted agent says each of its actions to one
// server: the server's own tool names and argument shapes. A step may
// take two calls where a server has no single tool for it (typing then
// Enter on chrome-devtools-mcp).
type dialect struct {
	navigate func(url string) toolCall
	snapshot func() toolCall
	click    func(ref string) toolCall
	fill     func(ref, text string, submit bool) []toolCall
	choose   func(ref, value string) toolCall
	press    func(key string) toolCall
	waitFor  func(text string) toolCall
	// find searches the page for text, where the server has a tool for
	// it (nil: it has none, and the agent reads the snapshot only).
	find func(text string) toolCall
}

type toolCall struct {
	name string
	args map[string]any
}

// dialects are keyed by server name.
var dialects = map[string]dialect{
	"hybroute": {
		navigate: func(url string) toolCall { return toolCall{"browser_navigate", map[string]any{"url": url}} },
		snapshot: func() toolCall { return toolCall{"browser_snapshot", map[string]any{}} },
		click:    func(ref string) toolCall { return toolCall{"browser_click", map[string]any{"ref": ref}} },
		fill: func(ref, text string, submit bool) []toolCall {
			return []toolCall{{"browser_type", map[string]any{"ref": ref, "text": text, "submit": submit}}}
		},
		choose: func(ref, value string) toolCall {
			return toolCall{"browser_select_option", map[string]any{"ref": ref, "values": []string{value}}}
		},
		press:   func(key string) toolCall { return toolCall{"browser_press", map[string]any{"key": key}} },
		waitFor: func(text string) toolCall { return toolCall{"browser_wait_for", map[string]any{"text": text}} },
		find:    func(text string) toolCall { return toolCall{"browser_snapshot", map[string]any{"find": text}} },
	},
	"Playwright MCP": {
		navigate: func(url string) toolCall { return toolCall{"browser_navigate", map[string]any{"url": url}} },
		snapshot: func() toolCall { return toolCall{"browser_snapshot", map[string]any{}} },
		click:    func(ref string) toolCall { return toolCall{"browser_click", map[string]any{"target": ref}} },
		fill: func(ref, text string, submit bool) []toolCall {
			return []toolCall{{"browser_type", map[string]any{"target": ref, "text": text, "submit": submit}}}
		},
		choose: func(ref, value string) toolCall {
			return toolCall{"browser_select_option", map[string]any{"target": ref, "values": []string{value}}}
		},
		press:   func(key string) toolCall { return toolCall{"browser_press_key", map[string]any{"key": key}} },
		waitFor: func(text string) toolCall { return toolCall{"browser_wait_for", map[string]any{"text": text}} },
		find:    func(text string) toolCall { return toolCall{"browser_find", map[string]any{"text": text}} },
	},
	"chrome-devtools-mcp": {
		navigate: func(url string) toolCall {
			return toolCall{"navigate_page", map[string]any{"type": "url", "url": url}}
		},
		snapshot: func() toolCall { return toolCall{"take_snapshot", map[string]any{}} },
		click:    func(ref string) toolCall { return toolCall{"click", map[string]any{"uid": ref}} },
		fill: func(ref, text string, submit bool) []toolCall {
			c := []toolCall{{"fill", map[string]any{"uid": ref, "value": text}}}
			if submit {
				c = append(c, toolCall{"press_key", map[string]any{"key": "Enter"}})
			}
			return c
		},
		choose: func(ref, value string) toolCall {
			return toolCall{"fill", map[string]any{"uid": ref, "value": value}}
		},
		press: func(key string) toolCall { return toolCall{"press_key", map[string]any{"key": key}} },
		waitFor: func(text string) toolCall {
			return toolCall{"wait_for", map[string]any{"text": []string{text}}}
		},
	},
}
