// walk reads the document of the frame it runs in as the snapshot's items:
// the accessibility tree as the page's own DOM gives it, which costs a
// fraction of Chromium's full AX tree on a large page. It runs in an
// isolated world, so the page can neither see nor change the ref
// registry. next is the first free ref number; the result says the next
// free one after this walk, and the size of the items as JSON. Items of
// up to inline characters come with it; larger ones stay here, and the
// caller reads them with read, in messages of a bounded size, all of
// them or (after select) the part a cut snapshot shows, so no message
// grows with the page.
function walk(next, inline) {
	const W = globalThis.__hybroute || (globalThis.__hybroute = { refs: new WeakMap(), byRef: new Map(), frames: [], next: 1 });
	if (next > W.next) W.next = next;
	W.byRef = new Map();
	W.info = new Map();
	W.frames = [];
	const INTERACTIVE = new Set(["button", "link", "textbox", "searchbox", "checkbox", "radio", "combobox", "listbox", "option",
		"menuitem", "menuitemcheckbox", "menuitemradio", "tab", "switch", "slider", "spinbutton", "treeitem", "DisclosureTriangle"]);
	const TRANSPARENT = new Set(["none", "generic", "presentation", "LabelText"]);
	const FROM_CONTENT = new Set(["button", "link", "heading", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option",
		"cell", "columnheader", "rowheader", "treeitem", "checkbox", "radio", "switch", "tooltip", "DisclosureTriangle"]);
	const SKIP = new Set(["SCRIPT", "STYLE", "TEMPLATE", "NOSCRIPT", "HEAD", "TITLE", "META", "LINK", "BASE"]);
	const TAGS = {
		ARTICLE: "article", ASIDE: "complementary", BUTTON: "button", DATALIST: "listbox", DD: "definition", DT: "term",
		DETAILS: "group", DIALOG: "dialog", FIELDSET: "group", FIGURE: "figure", FORM: "form", H1: "heading", H2: "heading",
		H3: "heading", H4: "heading", H5: "heading", H6: "heading", HR: "separator", LI: "listitem", MAIN: "main", MENU: "list",
		NAV: "navigation", OL: "list", UL: "list", OPTGROUP: "group", OPTION: "option", OUTPUT: "status", P: "paragraph",
		PROGRESS: "progressbar", METER: "meter", TABLE: "table", TBODY: "rowgroup", THEAD: "rowgroup", TFOOT: "rowgroup",
		TD: "cell", TH: "columnheader", TR: "row", TEXTAREA: "textbox", SUMMARY: "DisclosureTriangle", LEGEND: "Legend",
		BLOCKQUOTE: "blockquote", CAPTION: "caption", FIGCAPTION: "Figcaption", LABEL: "LabelText", IFRAME: "iframe",
		FRAME: "iframe", PRE: "generic", CODE: "code",
	};
	const INPUTS = {
		button: "button", submit: "button", reset: "button", image: "button", checkbox: "checkbox", radio: "radio",
		range: "slider", number: "spinbutton", search: "searchbox", file: "button", color: "ColorWell",
	};
	const ws = /\s+/g;
	const clean = (s) => (s ? s.replace(ws, " ").trim() : "");
	const landmarkScoped = (el) => el.parentElement && el.parentElement.closest("article,aside,main,nav,section");

	function implicitRole(el) {
		const tag = el.tagName;
		switch (tag) {
			case "A": case "AREA": return el.hasAttribute("href") ? "link" : "generic";
			case "IMG": return el.getAttribute("alt") === "" ? "none" : "img";
			case "HEADER": return landmarkScoped(el) ? "generic" : "banner";
			case "FOOTER": return landmarkScoped(el) ? "generic" : "contentinfo";
			case "SECTION": return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby") ? "region" : "generic";
			case "SELECT": return el.multiple || el.size > 1 ? "listbox" : "combobox";
			case "INPUT": {
				const type = (el.getAttribute("type") || "text").toLowerCase();
				if (type === "hidden") return "";
				if (INPUTS[type]) return type === "search" && el.hasAttribute("list") ? "combobox" : INPUTS[type];
				return el.hasAttribute("list") ? "combobox" : "textbox";
			}
		}
		const r = TAGS[tag];
		if (r) return r;
		// The root of an editing host is a textbox (reading isContentEditable
		// costs a style lookup: only where the attribute is).
		if (el.hasAttribute("contenteditable") && el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return "textbox";
		return "generic";
	}

	// textOf is the text an element's content gives its name.
	function textOf(el, depth) {
		let out = "";
		for (let c = el.firstChild; c; c = c.nextSibling) {
			if (c.nodeType === 3) out += c.data;
			else if (c.nodeType === 1 && depth < 20 && !SKIP.has(c.tagName)) {
				if (c.getAttribute("aria-hidden") === "true") continue;
				const label = c.getAttribute("aria-label");
				if (label) out += " " + label + " ";
				else if (c.tagName === "IMG") out += " " + (c.getAttribute("alt") || "") + " ";
				else if (c.tagName === "INPUT" || c.tagName === "SELECT" || c.tagName === "TEXTAREA") out += " " + (c.value || "") + " ";
				else out += (c.tagName === "BR" ? " " : "") + textOf(c, depth + 1) + (/^(DIV|P|LI|BR|TD|TH|TR|H[1-6])$/.test(c.tagName) ? " " : "");
			}
		}
		return out;
	}

	function byIds(el, attr) {
		const ids = el.getAttribute(attr);
		if (!ids) return "";
		const root = el.getRootNode();
		return clean(ids.split(/\s+/).map((id) => {
			const r = root.getElementById ? root.getElementById(id) : null;
			return r ? r.getAttribute("aria-label") || textOf(r, 0) : "";
		}).join(" "));
	}

	// labelText is a label's text without the control's own content.
	function labelText(label, control) {
		let out = "";
		for (let c = label.firstChild; c; c = c.nextSibling) {
			if (c === control) continue;
			if (c.nodeType === 3) out += c.data;
			else if (c.nodeType === 1 && !c.contains(control) && !/^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(c.tagName)) out += " " + textOf(c, 0) + " ";
			else if (c.nodeType === 1 && c.contains(control)) out += " " + labelText(c, control) + " ";
		}
		return out;
	}

	function nameOf(el, role) {
		let n = byIds(el, "aria-labelledby") || clean(el.getAttribute("aria-label"));
		if (n) return n;
		const tag = el.tagName;
		if ((tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || tag === "METER" || tag === "PROGRESS" || tag === "OUTPUT") && el.labels && el.labels.length) {
			n = clean(Array.from(el.labels, (l) => labelText(l, el)).join(" "));
			if (n) return n;
		}
		if (tag === "INPUT") {
			const type = (el.getAttribute("type") || "").toLowerCase();
			if (type === "button" || type === "submit" || type === "reset") {
				n = clean(el.value) || (type === "submit" ? "Submit" : type === "reset" ? "Reset" : "");
			} else if (type === "image") n = clean(el.getAttribute("alt"));
			if (n) return n;
		} else if (tag === "IMG" || tag === "AREA") {
			n = clean(el.getAttribute("alt"));
		} else if (tag === "FIELDSET") {
			const l = el.querySelector(":scope > legend");
			n = l ? clean(textOf(l, 0)) : "";
		} else if (tag === "TABLE") {
			const c = el.querySelector(":scope > caption");
			n = c ? clean(textOf(c, 0)) : "";
		} else if (tag === "FIGURE") {
			const c = el.querySelector(":scope > figcaption");
			n = c ? clean(textOf(c, 0)) : "";
		} else if (tag === "OPTION") {
			n = clean(el.label || el.text);
		} else if (FROM_CONTENT.has(role) || (role === "heading")) {
			n = clean(textOf(el, 0));
		}
		if (n) return n;
		return clean(el.getAttribute("title")) || clean(tag === "INPUT" || tag === "TEXTAREA" ? el.getAttribute("placeholder") : "");
	}

	function valueOf(el, role, plain) {
		const tag = el.tagName;
		if (tag === "INPUT") {
			const type = (el.getAttribute("type") || "text").toLowerCase();
			if (type === "checkbox" || type === "radio" || INPUTS[type] === "button" && type !== "file") return "";
			if (type === "password") return "•".repeat(el.value.length);
			if (type === "file") return el.files && el.files.length ? Array.from(el.files, (f) => f.name).join(", ") : "No file chosen";
			return clean(el.value);
		}
		if (tag === "TEXTAREA") return clean(el.value);
		if (tag === "SELECT" && role === "combobox") {
			const o = el.selectedOptions && el.selectedOptions[0];
			return o ? clean(o.label || o.text) : "";
		}
		if (tag === "PROGRESS" || tag === "METER") return String(el.value);
		const v = plain ? "" : el.getAttribute("aria-valuetext") || el.getAttribute("aria-valuenow");
		return v ? clean(v) : "";
	}

	function deepActive(doc) {
		let a = doc.activeElement;
		while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
		return a;
	}
	const active = deepActive(document);

	function ref(el) {
		let r = W.refs.get(el);
		if (!r) {
			r = "e" + W.next++;
			W.refs.set(el, r);
		}
		W.byRef.set(r, el);
		return r;
	}

	function push(out, it) {
		if (typeof it === "string") {
			if (!it) return;
			const last = out.length - 1;
			if (last >= 0 && typeof out[last] === "string") {
				out[last] = out[last] + " " + it;
				return;
			}
		}
		out.push(it);
	}

	// kids walks the children of a node (and its shadow root's, which is
	// what renders).
	function kids(node, out, depth, skipText) {
		const from = node.shadowRoot || node;
		const slotted = node.tagName === "SLOT" ? node.assignedNodes({ flatten: true }) : null;
		const list = slotted && slotted.length ? slotted : from.childNodes;
		for (let i = 0; i < list.length; i++) {
			const c = list[i];
			if (c.nodeType === 3) {
				if (!skipText) push(out, clean(c.data));
			} else if (c.nodeType === 1) {
				build(c, out, depth + 1);
			}
		}
	}

	function build(el, out, depth) {
		const plain = !el.hasAttributes();
		if (depth > 400 || SKIP.has(el.tagName) || (!plain && el.getAttribute("aria-hidden") === "true")) return;
		let hiddenSelf = false;
		// A closed select's options have no box of their own.
		if (el.tagName !== "OPTION" && el.tagName !== "OPTGROUP" && !el.checkVisibility({ visibilityProperty: true })) {
			const cs = getComputedStyle(el);
			if (cs.display === "none") return;
			if (cs.display !== "contents") {
				if (cs.visibility === "visible") return; // no box: hidden by an ancestor's content-visibility
				hiddenSelf = true;
			}
		}
		let role = implicitRole(el);
		const explicit = plain ? "" : (el.getAttribute("role") || "").trim().split(/\s+/)[0];
		const focusable = el.tagName !== "IFRAME" && el.tagName !== "FRAME" && el.tabIndex >= 0 || (!plain && el.hasAttribute("tabindex")) || role === "textbox" && el.isContentEditable;
		if (explicit && !((explicit === "none" || explicit === "presentation") && focusable)) role = explicit;
		if (!role) return;
		if (hiddenSelf) {
			kids(el, out, depth, true);
			return;
		}
		const tag = el.tagName;
		const interactive = INTERACTIVE.has(role) || (focusable && !el.matches(":disabled"));
		const name = TRANSPARENT.has(role) && !interactive ? (plain ? "" : clean(el.getAttribute("aria-label"))) : nameOf(el, role);
		const children = [];
		let note = "";
		if (tag === "IFRAME" || tag === "FRAME") {
			let doc = null;
			try { doc = el.contentDocument; } catch (e) { doc = null; }
			if (doc && doc.documentElement) kids(doc.body || doc.documentElement, children, depth, false);
			else {
				note = "frame:" + W.frames.length;
				W.frames.push(el);
			}
		} else if (tag === "SELECT") {
			for (const o of el.querySelectorAll("option")) build(o, children, depth + 1);
		} else if (tag === "LABEL") {
			const c = el.control;
			kids(el, children, depth, !!(c && el.contains(c)));
		} else if (!(tag === "INPUT" || tag === "TEXTAREA" || tag === "OPTION" || tag === "IMG")) {
			kids(el, children, depth, false);
		}
		if (TRANSPARENT.has(role) && !name && !interactive) {
			for (const c of children) push(out, c);
			return;
		}
		const it = { r: role };
		if (name) it.n = name;
		const attrs = [];
		if (role === "heading") attrs.push("level=" + (el.getAttribute("aria-level") || (/^H[1-6]$/.test(tag) ? tag[1] : "2")));
		if (el === active && el !== document.body) attrs.push("focused");
		if (role === "checkbox" || role === "radio" || role === "switch" || role === "menuitemcheckbox" || role === "menuitemradio") {
			const ac = el.getAttribute("aria-checked");
			if (el.indeterminate || ac === "mixed") attrs.push("checked=mixed");
			else if (tag === "INPUT" ? el.checked : ac === "true") attrs.push("checked");
		}
		if (!plain && el.getAttribute("aria-pressed") === "true") attrs.push("pressed");
		if (tag === "OPTION" ? el.selected && !el.parentElement?.closest("select")?.multiple : !plain && el.getAttribute("aria-selected") === "true") attrs.push("selected");
		if (!plain && el.getAttribute("aria-expanded") === "true") attrs.push("expanded");
		if ((!plain && el.getAttribute("aria-disabled") === "true") || (/^(BUTTON|INPUT|SELECT|TEXTAREA|OPTION|FIELDSET)$/.test(tag) && el.matches(":disabled"))) attrs.push("disabled");
		if (attrs.length) it.a = attrs;
		if (interactive) {
			it.f = ref(el);
			W.info.set(it.f, [role, name]);
		}
		if (role === "link" && el.href) it.u = el.href;
		let value = valueOf(el, role, plain);
		if (note) it.o = note;
		// The text of a button or a link is its name: do not print it twice.
		if (children.length === 1 && typeof children[0] === "string" && (!name || children[0] === name || children[0] === value)) {
			if (!name && children[0] !== value) value = value ? value + " " + children[0] : children[0];
			children.length = 0;
		}
		if (value) it.v = value;
		if (children.length) it.c = children;
		out.push(it);
	}

	const items = [];
	const root = document.body || document.documentElement;
	if (root) kids(root, items, 0, false);

	// countAll counts the items under a list, as "… N more below" does.
	const countAll = (list) => {
		let n = list.length;
		for (const it of list) if (typeof it !== "string" && it.c) n += countAll(it.c);
		return n;
	};
	// The positions read goes on from: a stack of lists and the depth of
	// their items; depth cuts the items at that many levels (0: none).
	const from = (roots, depth) => {
		W.stack = [{ list: roots, i: 0, d: 0 }];
		W.depth = depth;
	};
	// read returns the next items in pre-order, up to about budget
	// characters of JSON: an item without its children, which follow it
	// (k: how many); an item cut by the depth says how many items are
	// under it (m) instead.
	// A string of the page is taken in up to CAP characters: more than
	// the snapshot shows of a line (a name 300, a value 500) or of its
	// text (40,000 bytes unless the operator says otherwise), so that no
	// one item makes a message large.
	const CAP = 65536;
	const cap = (x) => (typeof x === "string" && x.length > CAP ? x.slice(0, CAP) : x);
	W.read = (budget) => {
		const out = [];
		let used = 0;
		const st = W.stack;
		while (st.length) {
			const top = st[st.length - 1];
			if (top.i >= top.list.length) {
				st.pop();
				continue;
			}
			if (used >= budget) break;
			const it = top.list[top.i++];
			let rec = cap(it);
			if (typeof it !== "string") {
				rec = {};
				for (const k in it) if (k !== "c") rec[k] = cap(it[k]);
				if (it.c && it.c.length) {
					if (W.depth > 0 && top.d + 1 >= W.depth) rec.m = countAll(it.c);
					else {
						rec.k = it.c.length;
						st.push({ list: it.c, i: 0, d: top.d + 1 });
					}
				}
			}
			used += JSON.stringify(rec).length;
			out.push(rec);
		}
		if (!st.length) W.items = null; // read: the page need not keep it
		return { recs: out, done: st.length === 0, used };
	};
	W.release = () => {
		W.items = null;
		W.stack = [];
	};
	// select makes read return what a shaped snapshot shows (the subtree
	// of ref, what contains find, depth levels) and says how many lines
	// that is, or that ref is not there (missing) or nothing contains find
	// (nothing). The model's text of a link is its URL relative to the
	// page where it is on the page's origin: find looks at both.
	W.select = (o) => {
		let roots = W.items;
		if (o.ref) {
			const findRef = (list) => {
				for (const it of list) {
					if (typeof it === "string") continue;
					if (it.f === o.ref) return it;
					const f = it.c && findRef(it.c);
					if (f) return f;
				}
				return null;
			};
			const it = findRef(roots);
			if (!it) return { missing: true };
			roots = [it];
		}
		if (o.find) {
			const f = o.find;
			const short = (u) => {
				try {
					const x = new URL(u);
					return x.origin === location.origin ? x.pathname + x.search + x.hash : "";
				} catch (e) {
					return "";
				}
			};
			const has = (s) => !!s && s.toLowerCase().includes(f);
			const matches = (it) => typeof it === "string" ? has(it) : has(it.n) || has(it.v) || has(it.r) || has(it.u) || has(short(it.u));
			const prune = (list) => {
				const out = [];
				for (const it of list) {
					if (matches(it)) out.push(it);
					else if (typeof it !== "string" && it.c) {
						const c = prune(it.c);
						if (c.length) out.push(Object.assign({}, it, { c }));
					}
				}
				return out;
			};
			roots = prune(roots);
			if (!roots.length) return { nothing: true };
		}
		const depth = o.depth || 0;
		const lines = (list, d) => {
			let n = 0;
			for (const it of list) {
				n++;
				if (typeof it === "string") continue;
				if (it.u) n++;
				if (it.c && it.c.length) n += depth > 0 && d + 1 >= depth ? 1 : lines(it.c, d + 1);
			}
			return n;
		};
		from(roots, depth);
		return { lines: lines(roots, 0) };
	};
	const size = JSON.stringify(items).length;
	if (size <= (inline || 0)) {
		W.release();
		return { next: W.next, title: document.title, size, items };
	}
	W.items = items;
	from(items, 0);
	return { next: W.next, title: document.title, size };
}
