// Command gencorpus writes the URL-scanner benchmark corpus: about 1 MiB of
// mixed code (JavaScript, TypeScript, Python, Go, shell, JSON, HTML) with
// URLs planted at a realistic density among many colons that are not URLs
// (object literals, dicts, ternaries, type annotations, times, struct tags).
//
//	go run ./bench/gencorpus > testdata/scan-corpus.txt
//
// It also writes the URLs it planted, in order of first appearance and
// deduplicated, to the -want file: that is what ScanURLs must return for
// the corpus, so the corpus test proves the scanner finds exactly them. The
// expected strings are spelled out by hand next to each template rather
// than derived by scanning, so the two cannot agree by accident.
//
// The output is deterministic (fixed seed), so the committed files can be
// regenerated and diffed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

const target = 1 << 20

// block is one snippet of code and the URLs ScanURLs must report for it,
// in order.
type block struct {
	code string
	want []string
}

var (
	publicHosts = []string{
		"api.example.com", "github.com", "www.google.com", "dashboard.acme.io",
		"cdn.jsdelivr.net", "status.vendor.dev", "news.ycombinator.com",
		"docs.python.org", "pkg.go.dev", "app.company.co.uk",
	}
	privateHosts = []string{
		"localhost:3000", "127.0.0.1:8080", "192.168.1.9", "10.0.0.5:9000",
		"foo.localhost:5173", "[::1]:8080", "localhost", "0.0.0.0:8000",
		"172.16.4.20:5000", "169.254.169.254",
	}
	paths = []string{
		"", "/", "/api/users", "/health", "/login", "/v1/items?limit=10&offset=20",
		"/dashboard/daily", "/graphql", "/static/app.js", "/search?q=go+url#top",
	}
	idents = []string{"user", "order", "item", "session", "report", "widget", "invoice", "team"}
)

type gen struct{ r *rand.Rand }

func (g gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g gen) host() string {
	if g.r.IntN(3) == 0 {
		return g.pick(privateHosts)
	}
	return g.pick(publicHosts)
}

// url returns a plain URL that ScanURLs reports unchanged.
func (g gen) url() string {
	scheme := "https"
	h := g.host()
	if strings.Contains(h, "localhost") || h[0] == '[' || h[0] >= '0' && h[0] <= '9' {
		scheme = "http"
	}
	return scheme + "://" + h + g.pick(paths)
}

// title upper-cases the first letter of an ASCII identifier.
func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

func (g gen) id() string { return g.pick(idents) }

func (g gen) n() int { return g.r.IntN(900) + 10 }

// Each template returns a block; the comment on a template names the
// scanner rule its URL exercises.
func (g gen) templates() []func() block {
	return []func() block{
		// JS fetch, plain URL in double quotes.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`async function load%[1]s(id) {
  const res = await fetch("%[2]s", { method: "GET", headers: { "Content-Type": "application/json", Accept: "*/*" } });
  if (!res.ok) throw new Error(`+"`load %[1]s: ${res.status}`"+`);
  return res.ok ? await res.json() : null;
}
`, g.id(), u), []string{u}}
		},
		// Playwright goto, single quotes, options object.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`await page.goto('%s', { waitUntil: 'networkidle', timeout: %d });
await page.screenshot({ path: 'shot-%d.png', fullPage: true });
`, u, g.n()*100, g.n()), []string{u}}
		},
		// Template literal: the placeholder port ends the URL.
		func() block {
			h := g.pick([]string{"localhost", "127.0.0.1"})
			return block{fmt.Sprintf("const api = `http://%s:${port}/api/v%d`;\nconst opts = { retries: %d, backoff: 1.5, label: `%s:${id}` };\n", h, g.r.IntN(3)+1, g.r.IntN(5), g.id()), []string{"http://" + h}}
		},
		// Ternary with two URLs.
		func() block {
			pub := "https://" + g.pick(publicHosts)
			return block{fmt.Sprintf("const base = process.env.NODE_ENV === 'production' ? %q : \"http://localhost:3000\";\n", pub), []string{pub, "http://localhost:3000"}}
		},
		// JSON-escaped slashes inside a JS string.
		func() block {
			p := 4000 + g.r.IntN(3)
			return block{fmt.Sprintf(`const cfg = JSON.parse('{"url":"http:\/\/localhost:%d\/graphql","debug":true}');
`, p), []string{fmt.Sprintf("http://localhost:%d/graphql", p)}}
		},
		// Upper-case scheme, reported with the scheme lower-cased.
		func() block {
			h := g.pick(publicHosts)
			return block{fmt.Sprintf("await page.goto(\"HTTPS://%s/Home\");\n", h), []string{"https://" + h + "/Home"}}
		},
		// WebSocket.
		func() block {
			h := g.host()
			return block{fmt.Sprintf("const ws = new WebSocket(\"wss://%s/socket\");\nws.onmessage = (ev: MessageEvent) => console.log(ev.data);\n", h), []string{"wss://" + h + "/socket"}}
		},
		// TypeScript types: colons, no URLs.
		func() block {
			return block{fmt.Sprintf(`interface %[1]sConfig {
  baseUrl: string;
  retries?: number;
  timeout: number;
  onError: (err: Error, attempt: number) => void;
  labels: Record<string, string>;
}
type %[1]sState = { status: "idle" | "loading" | "done"; startedAt: Date | null };
`, title(g.id())), nil}
		},
		// Python requests.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`def fetch_%s(session: requests.Session, item_id: int) -> dict:
    resp = session.get("%s", timeout=%d, headers={"Accept": "application/json"})
    resp.raise_for_status()
    return resp.json()
`, g.id(), u, g.r.IntN(30)+1), []string{u}}
		},
		// Python f-string: placeholder port.
		func() block {
			return block{fmt.Sprintf(`    url = f"http://127.0.0.1:{port}/status"
    data = {"retries": %d, "window": "09:30-17:45", "ratio": 0.%d}
`, g.r.IntN(5), g.r.IntN(100)), []string{"http://127.0.0.1"}}
		},
		// Python f-string and printf with the placeholder in the host: no
		// literal host, nothing reported.
		func() block {
			return block{`    target = f"https://{host}/api/{version}"
    legacy = "http://%s:%d/" % (host, port)
    items = values[1:3] + values[::2]
`, nil}
		},
		// Python Playwright.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`async with async_playwright() as p:
    browser = await p.chromium.launch(headless=True)
    page = await browser.new_page()
    await page.goto("%s")
`, u), []string{u}}
		},
		// Go net/http.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`func get%[1]s(ctx context.Context) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "%[2]s", nil)
	if err != nil {
		return nil, fmt.Errorf("get %[1]s: %%w", err)
	}
	return http.DefaultClient.Do(req)
}
`, title(g.id()), u), []string{u}}
		},
		// Go struct tags and a Sprintf with a host verb: no URLs.
		func() block {
			return block{fmt.Sprintf("type %[1]s struct {\n\tName string `json:\"name\" yaml:\"name\"`\n\tPort int `json:\"port,omitempty\"`\n}\n\nfunc (s %[1]s) URL() string { return fmt.Sprintf(\"http://%%s:%%d/\", s.Name, s.Port) }\n", title(g.id())), nil}
		},
		// Go listen address: a bare host:port.
		func() block {
			h := g.pick([]string{"127.0.0.1", "localhost", "0.0.0.0"})
			p := 8000 + g.r.IntN(5)
			return block{fmt.Sprintf("\tln, err := net.Listen(\"tcp\", \"%s:%d\")\n\tif err != nil {\n\t\tlog.Fatalf(\"listen: %%v\", err)\n\t}\n", h, p), []string{fmt.Sprintf("http://%s:%d", h, p)}}
		},
		// Shell curl with a header and a pipe.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`curl -sSf -H "Authorization: Bearer $TOKEN" %s | jq '.items[] | {id: .id, name: .name}'
`, u), []string{u}}
		},
		// Shell: variable port ends the URL; docker port maps.
		func() block {
			return block{`curl -fsS http://localhost:$PORT/health || exit 1
docker run -d -p 8080:80 -p 127.0.0.1:5432:5432 --name db postgres:16
echo "done at $(date +%H:%M:%S)"
`, []string{"http://localhost", "http://127.0.0.1:5432"}}
		},
		// JSON config.
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`{"name": "%s-svc", "endpoint": "%s", "port": %d, "enabled": true, "schedule": "0 7 * * 1-5", "tz": "Europe/Berlin"}
`, g.id(), u, g.n()), []string{u}}
		},
		// HTML with href, mailto (not reported) and a data: image (reported
		// whole, for its payload to be read).
		func() block {
			u := g.url()
			return block{fmt.Sprintf(`<div class="card" style="margin: 0; padding: 4px">
  <a href="%s">Open</a> <a href="mailto:ops@example.com">Mail</a>
  <img src="data:image/png;base64,iVBORw0KGgo=" alt="logo">
</div>
`, u), []string{u, "data:image/png;base64,iVBORw0KGgo="}}
		},
		// CSS colons.
		func() block {
			return block{`<style>
  a:hover { color: #fff; text-decoration: none; }
  @media (max-width: 600px) { .card { margin: 0 auto; } }
</style>
`, nil}
		},
		// Comment with a wikipedia-style URL and sentence punctuation.
		func() block {
			return block{"// See https://en.wikipedia.org/wiki/Retry_(computing). Also: the backoff doubles.\n", []string{"https://en.wikipedia.org/wiki/Retry_(computing)"}}
		},
		// Regexp with escaped dots (JavaScript): both readings reported.
		func() block {
			return block{"const allowed = new RegExp('https://go\\.example\\.com');\n", []string{"https://go.example.com", "https://go"}}
		},
		// Python class body: annotations, dicts, slices, lambdas.
		func() block {
			return block{fmt.Sprintf(`class %[1]sService:
    retries: int = %[2]d
    labels: dict[str, str] = {"team": "core", "tier": "gold", "since": "2021-03-04T08:15:00Z"}

    def window(self, rows: list[dict], start: int = 0) -> list[dict]:
        picked = rows[start:start + %[2]d]
        key = lambda r: (r["priority"], r.get("due", "23:59"))
        return sorted(picked, key=key)[::-1] if self.retries else picked
`, title(g.id()), g.r.IntN(9)+1), nil}
		},
		// Go function with a map literal, a label and a select.
		func() block {
			return block{fmt.Sprintf(`func summarize%[1]s(ctx context.Context, in <-chan Event) (map[string]int, error) {
	counts := map[string]int{"ok": 0, "failed": 0, "skipped": 0}
loop:
	for {
		select {
		case <-ctx.Done():
			return counts, ctx.Err()
		case ev, ok := <-in:
			if !ok {
				break loop
			}
			counts[ev.Status]++
		}
	}
	return counts, nil
}
`, title(g.id())), nil}
		},
		// JS component with object literals and a ternary chain.
		func() block {
			return block{fmt.Sprintf(`export function %[1]sCard({ %[2]s, onSelect }: { %[2]s: %[1]s; onSelect: (id: string) => void }) {
  const style = { display: "flex", gap: 8, padding: "4px 8px", color: %[2]s.active ? "green" : "gray" };
  const label = %[2]s.count > 99 ? "99+" : %[2]s.count > 0 ? String(%[2]s.count) : "";
  return { type: "div", props: { style, onClick: () => onSelect(%[2]s.id), children: [label] } };
}
`, title(g.id()), g.id()), nil}
		},
		// Shell loop with parameter expansions and a here-doc of settings.
		func() block {
			return block{`for f in "${FILES[@]:-}"; do
  name="${f%.*}"; ext="${f##*.}"
  [[ -z "${ext:-}" ]] && continue
  printf '%s:%s\n' "$name" "$ext"
done
cat <<CONF > settings.yaml
retries: 3
timeout: 30s
schedule: "07:00"
CONF
`, nil}
		},
		// JSON without URLs.
		func() block {
			return block{fmt.Sprintf(`{"id": %d, "name": "%s", "tags": ["alpha", "beta"], "limits": {"cpu": "500m", "memory": "256Mi"}, "window": {"from": "08:00", "to": "18:30"}, "ratio": 0.75}
`, g.n(), g.id()), nil}
		},
		// Plain code, lots of colons.
		func() block {
			return block{fmt.Sprintf(`const %[1]s = { id: %[2]d, name: "%[1]s", tags: ["a", "b"], meta: { createdAt: "2024-01-0%[3]d 12:30:00" } };
switch (kind) { case "a": return x ? y : z; default: break; }
`, g.id(), g.n(), g.r.IntN(9)+1), nil}
		},
	}
}

func main() {
	wantPath := flag.String("want", "testdata/scan-corpus.want.txt", "where to write the expected URLs (empty: do not write)")
	flag.Parse()

	g := gen{rand.New(rand.NewPCG(20240611, 7))}
	ts := g.templates()
	var code strings.Builder
	var want []string
	seen := map[string]bool{}
	// About one block in four plants a URL: browser-call code is URL-heavy,
	// but most lines of any program are not URLs.
	var withURL, plain []func() block
	for _, t := range ts {
		if len(t().want) > 0 {
			withURL = append(withURL, t)
		} else {
			plain = append(plain, t)
		}
	}
	for code.Len() < target {
		pool := plain
		if g.r.IntN(4) == 0 {
			pool = withURL
		}
		b := pool[g.r.IntN(len(pool))]()
		if code.Len()+len(b.code) > target+target/200 {
			break
		}
		code.WriteString(b.code)
		for _, u := range b.want {
			if !seen[u] {
				seen[u] = true
				want = append(want, u)
			}
		}
	}

	w := bufio.NewWriter(os.Stdout)
	w.WriteString(code.String())
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *wantPath != "" {
		if err := os.WriteFile(*wantPath, []byte(strings.Join(want, "\n")+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
