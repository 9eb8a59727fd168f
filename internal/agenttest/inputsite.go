package agenttest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// NewInputSite serves the page the input, tab and dialog tools are tested
// on, on 127.0.0.1, closed in t.Cleanup:
//
//	/        InputHTML: fields of every kind, a hover menu, drags, a file
//	         input, text that comes and goes, links that open tabs, dialogs
//	/popup   a page a tab opens
func NewInputSite(t testing.TB) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlAt("/", InputHTML))
	mux.HandleFunc("/popup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><title>Popup page</title><h1>Popup</h1><p id="who">`+htmlEscape(r.URL.Query().Get("who"))+`</p>`)
	})
	mux.HandleFunc("/stock", func(w http.ResponseWriter, r *http.Request) {
		// Slow, as a real API is: an action that starts it waits for it.
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "in stock: "+htmlEscape(r.URL.Query().Get("size")))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// InputHTML is the input test page. What each control did is written to
// #out, which the tests read.
const InputHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Inputs</title>
<style>
body{font:16px sans-serif;margin:1em}
#menu{display:none} #hovered:hover + #menu{display:block}
.zone{display:inline-block;width:120px;height:60px;border:1px solid #888;margin:4px}
#handle{display:inline-block;width:40px;height:40px;background:#ccc}
</style></head>
<body>
<h1>Inputs</h1>
<p id="out">ready</p>
<label for="name">Name</label> <input id="name">
<label><input type="checkbox" id="sub"> Subscribe</label>
<fieldset><legend>Plan</legend>
<label><input type="radio" name="plan" value="basic" checked> Basic</label>
<label><input type="radio" name="plan" value="pro"> Pro</label>
</fieldset>
<label for="size">Size</label>
<select id="size"><option value="s">Small</option><option value="m">Medium</option><option value="l">Large</option></select>
<span id="stock"></span>
<label for="tops">Toppings</label>
<select id="tops" multiple><option>Cheese</option><option>Olives</option><option>Basil</option></select>
<label for="vol">Volume</label> <input id="vol" type="range" min="0" max="100" value="10">
<label for="file">Attachment</label> <input id="file" type="file" multiple>
<p><button id="hovered">Account</button><span id="menu"><a href="#settings">Settings</a></span></p>
<div id="card" class="zone" draggable="true" tabindex="0" role="button" aria-label="Card">Card</div>
<div id="done" class="zone" tabindex="0" role="button" aria-label="Done column">Done column</div>
<p><span id="handle" role="button" aria-label="Handle">Handle</span> <button id="target">Target</button></p>
<p><button id="later" onclick="later()">Load later</button> <span id="spinner">Loading…</span></p>
<p><a id="pop" href="/popup?who=one" target="_blank">Open popup</a> <a id="meta" href="http://169.254.169.254/latest/" target="_blank">Metadata popup</a></p>
<p><button id="ask" onclick="ask()">Ask</button></p>
<script>
const out = document.getElementById("out");
const say = s => { out.textContent = s; };
const form = () => ({
	name: document.getElementById("name").value,
	sub: document.getElementById("sub").checked,
	plan: document.querySelector("input[name=plan]:checked").value,
	size: document.getElementById("size").value,
	tops: Array.from(document.getElementById("tops").selectedOptions).map(o => o.value),
	vol: document.getElementById("vol").value,
});
document.getElementById("size").addEventListener("change", e => fetch("/stock?size=" + e.target.value).then(r => r.text()).then(t => { document.getElementById("stock").textContent = t; }));
for (const id of ["size", "tops", "vol", "sub"]) document.getElementById(id).addEventListener("change", () => say("change " + id));
document.getElementById("file").addEventListener("change", e => say("files " + Array.from(e.target.files).map(f => f.name + ":" + f.size).join(",")));
document.getElementById("hovered").addEventListener("mouseenter", () => say("hovered"));
const card = document.getElementById("card"), done = document.getElementById("done");
card.addEventListener("dragstart", e => e.dataTransfer.setData("text/plain", "Card"));
done.addEventListener("dragover", e => e.preventDefault());
done.addEventListener("drop", e => { e.preventDefault(); say("dropped " + e.dataTransfer.getData("text/plain")); });
let down = null;
document.getElementById("handle").addEventListener("mousedown", e => { down = [e.clientX, e.clientY, 0]; });
document.addEventListener("mousemove", e => { if (down) down[2]++; });
document.addEventListener("mouseup", e => {
	if (!down) return;
	const el = document.elementFromPoint(e.clientX, e.clientY);
	say("mouse drag onto " + (el ? el.id : "nothing") + " in " + down[2] + " moves");
	down = null;
});
function later() {
	setTimeout(() => { document.getElementById("spinner").remove(); const p = document.createElement("p"); p.textContent = "Loaded!"; document.body.appendChild(p); }, 400);
}
function ask() {
	const n = prompt("Your name?", "default");
	say("prompt " + JSON.stringify(n));
}
</script>
</body></html>`

// htmlAt serves html at path only, and 404 below it.
func htmlAt(path, html string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, html)
	}
}
