package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// Tool names of the form tools.
const (
	ToolSelectOption = "browser_select_option"
	ToolFillForm     = "browser_fill_form"
)

// maxFormFields bounds one browser_fill_form call.
const maxFormFields = 50

var formTools = []toolDef{
	{
		name:   ToolSelectOption,
		desc:   "Pick options of a <select> (combobox or listbox) by ref, by label or value; replaces the selection.",
		schema: `{"type":"object","properties":{"ref":{"type":"string"},"values":{"type":"array","items":{"type":"string"},"minItems":1},"element":{"type":"string"}},"required":["ref","values"]}`,
		run:    (*Toolset).selectOption,
	},
	{
		name:   ToolFillForm,
		desc:   fmt.Sprintf("Fill up to %d fields by ref in order, without submitting. value: text; true/false for a checkbox, true for a radio; an option for a combobox; a number for a slider. Stops at the first failure.", maxFormFields),
		schema: `{"type":"object","properties":{"fields":{"type":"array","minItems":1,"items":{"type":"object","properties":{"ref":{"type":"string"},"name":{"type":"string","description":"Optional, for the result"},"type":{"type":"string","enum":["textbox","checkbox","radio","combobox","slider"]},"value":{"type":"string"}},"required":["ref","type","value"]}}},"required":["fields"]}`,
		run:    (*Toolset).fillForm,
	},
}

// callOnNode calls the JavaScript function fn with this set to the node and
// the JSON args, and decodes its by-value result into out.
func callOnNode(ctx context.Context, ref string, node cdp.BackendNodeID, fn string, out any, args ...any) error {
	obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: node, ObjectGroup: "hybroute-agent"})
	if err != nil {
		return snapshot.StaleNode(ref, err)
	}
	defer func() {
		_, _ = chromedp.Call(ctx, runtime.ReleaseObjectGroup, runtime.ReleaseObjectGroupParams{ObjectGroup: "hybroute-agent"})
	}()
	cargs, err := snapshot.CallArgs(args)
	if err != nil {
		return err
	}
	r, err := chromedp.Call(ctx, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		ObjectID: obj.Object.ObjectID, FunctionDeclaration: fn, Arguments: cargs,
		ReturnByValue: new(true), UserGesture: new(true),
	})
	if err != nil {
		return snapshot.StaleNode(ref, err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("in the page: %s", modeltext.ExceptionText(r.ExceptionDetails))
	}
	if out == nil || r.Result == nil || len(r.Result.Value) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// fieldAnswer is what the page scripts below answer: an error for the
// model, or what they did.
type fieldAnswer struct {
	Error   string   `json:"error"`
	Options []string `json:"options"`
	Done    []string `json:"done"`
	Checked *bool    `json:"checked"`
}

func (a fieldAnswer) err(ref string) error {
	if a.Error == "" {
		return nil
	}
	msg := "the element " + ref + " " + a.Error
	if len(a.Options) > 0 {
		qs := make([]string, len(a.Options))
		for i, o := range a.Options {
			qs[i] = modeltext.Quote(o, 80)
		}
		msg += "; its options are " + strings.Join(qs, ", ")
	}
	return modeltext.Errorf("%s", msg)
}

// selectJS picks the options of a <select> named by label or value, and
// fires the events a user's pick fires.
const selectJS = `function(values) {
	if (!(this instanceof HTMLSelectElement)) return {error: "is not a drop-down list or list box (a <select>); click it and pick from what opens, or use browser_type"};
	if (this.disabled) return {error: "is disabled"};
	const opts = Array.from(this.options);
	const label = o => (o.label || o.textContent || "").trim();
	const picked = [];
	for (const v of values) {
		const t = String(v).trim();
		const o = opts.find(o => o.value === v) || opts.find(o => label(o) === t) || opts.find(o => label(o).toLowerCase() === t.toLowerCase());
		if (!o) return {error: "has no option " + JSON.stringify(t), options: opts.slice(0, 50).map(label)};
		if (o.disabled) return {error: "has the option " + JSON.stringify(t) + " disabled"};
		if (!picked.includes(o)) picked.push(o);
	}
	if (!this.multiple && picked.length > 1) return {error: "takes one option, not " + picked.length};
	for (const o of opts) o.selected = picked.includes(o);
	this.dispatchEvent(new Event("input", {bubbles: true}));
	this.dispatchEvent(new Event("change", {bubbles: true}));
	return {done: picked.map(label)};
}`

// checkedJS reads the checked state of a checkbox or radio button.
const checkedJS = `function() {
	if (this instanceof HTMLInputElement && (this.type === "checkbox" || this.type === "radio")) {
		if (this.disabled) return {error: "is disabled"};
		return {checked: this.checked};
	}
	const role = this.getAttribute && this.getAttribute("role");
	if (role === "checkbox" || role === "radio" || role === "switch" || role === "menuitemcheckbox" || role === "menuitemradio") {
		return {checked: this.getAttribute("aria-checked") === "true"};
	}
	return {error: "is not a checkbox or a radio button"};
}`

// sliderJS sets a range input's value as a user's drag would end.
const sliderJS = `function(v) {
	if (!(this instanceof HTMLInputElement) || this.type !== "range") return {error: "is not a slider input (<input type=range>); use browser_drag or browser_press with ArrowLeft/ArrowRight"};
	if (this.disabled) return {error: "is disabled"};
	const n = Number(v);
	if (!Number.isFinite(n)) return {error: "takes a number, not " + JSON.stringify(v)};
	Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value").set.call(this, String(n));
	this.dispatchEvent(new Event("input", {bubbles: true}));
	this.dispatchEvent(new Event("change", {bubbles: true}));
	return {done: [this.value]};
}`

func (t *Toolset) selectOption(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Ref     string   `json:"ref"`
		Values  []string `json:"values"`
		Element string   `json:"element"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if len(a.Values) == 0 {
		return toolError("values is required: the labels or values of the options to pick")
	}
	return t.onRef(ctx, s, key, a.Ref, func(ctx context.Context, e snapshot.Entry) (string, error) {
		picked, err := selectIn(ctx, a.Ref, e.Node(), a.Values)
		return "Selected " + quotes(picked) + " in", err
	})
}

func selectIn(ctx context.Context, ref string, node cdp.BackendNodeID, values []string) ([]string, error) {
	var ans fieldAnswer
	if err := callOnNode(ctx, ref, node, selectJS, &ans, values); err != nil {
		return nil, err
	}
	return ans.Done, ans.err(ref)
}

func quotes(ss []string) string {
	qs := make([]string, len(ss))
	for i, s := range ss {
		qs[i] = modeltext.Quote(s, 100)
	}
	return strings.Join(qs, ", ")
}

// formField is one field of browser_fill_form.
type formField struct {
	Ref   string `json:"ref"`
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value"`
}

func (t *Toolset) fillForm(ctx context.Context, s *session, key string, args json.RawMessage) Result {
	var a struct {
		Fields []formField `json:"fields"`
	}
	if err := decode(args, &a); err != nil {
		return argError(err)
	}
	if len(a.Fields) == 0 {
		return toolError("fields is required: the fields to fill, each with its ref, type and value")
	}
	if len(a.Fields) > maxFormFields {
		return toolError(fmt.Sprintf("%d fields: fill at most %d in one call", len(a.Fields), maxFormFields))
	}
	for i, f := range a.Fields {
		switch f.Type {
		case "textbox", "checkbox", "radio", "combobox", "slider":
		default:
			return toolError(fmt.Sprintf("fields[%d].type %q: use textbox, checkbox, radio, combobox or slider", i, f.Type))
		}
		if (f.Type == "checkbox" || f.Type == "radio") && f.Value != "true" && f.Value != "false" {
			return toolError(fmt.Sprintf("fields[%d].value %q: a %s takes true or false", i, f.Value, f.Type))
		}
	}
	var done []string
	var navigated bool
	res, c, err := t.do(ctx, s, key, "", reads|moves, func(ctx context.Context, c *call) error {
		return settled(ctx, c, &navigated, func() error {
			for _, f := range a.Fields {
				e, err := s.refs.Resolve(ctx, f.Ref, c.target)
				if err != nil {
					return err
				}
				if err := fillField(e.In(ctx), f, e.Node()); err != nil {
					return err
				}
				name := f.Name
				if name == "" {
					name = e.Name()
				}
				done = append(done, fmt.Sprintf("%s %s: %s", f.Ref, modeltext.Quote(name, 80), modeltext.Quote(f.Value, 80)))
			}
			return nil
		})
	})
	if err != nil && len(done) > 0 {
		// What was filled stays filled: say so, so the model goes on from
		// the field that failed.
		w, note := s.finish(res, c)
		return result(w, note, describe(err, c, key)+" (filled before it: "+strings.Join(done, "; ")+")", true)
	}
	return t.finishCall(s, key, res, c, err, func() string {
		return fmt.Sprintf("Filled %d fields:\n- %s", len(done), strings.Join(done, "\n- ")) + navNote(navigated)
	})
}

// fillField sets one field as a user would.
func fillField(ctx context.Context, f formField, node cdp.BackendNodeID) error {
	switch f.Type {
	case "textbox":
		return typeInto(ctx, f.Ref, node, f.Value)
	case "combobox":
		_, err := selectIn(ctx, f.Ref, node, []string{f.Value})
		return err
	case "slider":
		var ans fieldAnswer
		if err := callOnNode(ctx, f.Ref, node, sliderJS, &ans, f.Value); err != nil {
			return err
		}
		return ans.err(f.Ref)
	}
	// A checkbox or a radio button: clicked, with a real click, when its
	// state is not the one asked for.
	var ans fieldAnswer
	if err := callOnNode(ctx, f.Ref, node, checkedJS, &ans); err != nil {
		return err
	}
	if err := ans.err(f.Ref); err != nil {
		return err
	}
	want := f.Value == "true"
	if ans.Checked == nil || *ans.Checked == want {
		return nil
	}
	if f.Type == "radio" && !want {
		return modeltext.Errorf("the radio button %s cannot be unchecked by itself; pick another radio button of its group", f.Ref)
	}
	return clickNode(ctx, f.Ref, node)
}
