package main

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"strings"
	"time"
)

// The task suite's sites: the pages are templates in testdata/tasks, filled
// once from the data below and served on two loopback ports, so that an
// iframe can be cross-origin (127.0.0.1 on the other port) or cross-site
// (localhost on the other port).
//
//go:embed testdata/tasks/*.html
var taskPages embed.FS

var taskTemplates = template.Must(template.ParseFS(taskPages, "testdata/tasks/*.html"))

// sites is the two origins the tasks are served on.
type sites struct {
	// base is the first origin; other the second port on the same host
	// (cross-origin, same site); site the second port as localhost
	// (cross-site). All are "http://host:port", with no trailing slash.
	base, other, site string
	pages             map[string][]byte
	stop              func()
}

func (s *sites) url(path string) string { return s.base + path }

// tablePages and tableRowsPerPage shape the paginated table: the account
// the task looks for is on page 4.
const (
	tablePages       = 10
	tableRowsPerPage = 25
	catalogueItems   = 300
)

type tableRow struct {
	Page                       int
	ID, Owner, Opened, Balance string
}

func tableRows() []tableRow {
	owners := []string{"Ada Byron", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth", "Frances Allen", "John Backus"}
	var rows []tableRow
	for i := range tablePages * tableRowsPerPage {
		n := i + 1
		rows = append(rows, tableRow{
			Page:    i/tableRowsPerPage + 1,
			ID:      fmt.Sprintf("ACC-%04d", n),
			Owner:   owners[i%len(owners)],
			Opened:  fmt.Sprintf("20%02d-%02d-%02d", 10+n%14, 1+n%12, 1+n%28),
			Balance: fmt.Sprintf("$%d,%03d.%02d", 1+n*37%90, n*131%1000, n%100),
		})
	}
	return rows
}

type articleSection struct {
	Title string
	Paras []string
}

func articleSections() []articleSection {
	topics := []string{"Beginnings", "The first design", "Money", "The river", "Foundations", "The towers", "Completion", "Opening day", "Tolls", "Repairs", "The storm", "Today"}
	var secs []articleSection
	for i, t := range topics {
		s := articleSection{Title: fmt.Sprintf("%d. %s", i+1, t)}
		for p := range 5 {
			s.Paras = append(s.Paras, fmt.Sprintf("Part %d, paragraph %d. The town council met again to discuss %s; engineers, bankers and ferrymen argued for hours, the minutes ran to many pages, and the newspapers printed long letters about stone, iron, timber, tides and the cost of it all.", i+1, p+1, strings.ToLower(t)))
		}
		if t == "Completion" {
			s.Paras[3] = "After eleven years of work the last rivet was driven and the bridge was completed in 1893, two years late and a third over budget."
		}
		secs = append(secs, s)
	}
	return secs
}

type catalogueItem struct {
	N     int
	Price string
}

func catalogueItems300() []catalogueItem {
	items := make([]catalogueItem, catalogueItems)
	for i := range items {
		items[i] = catalogueItem{N: i, Price: fmt.Sprintf("€%d.%02d", 5+i*37%90, i*7%100)}
	}
	return items
}

type docPage struct {
	Slug, Title, Summary string
	Body                 []string
}

func docPages() []docPage {
	titles := []string{"Getting started", "Authentication", "Tokens", "Errors", "Pagination", "Webhooks", "Rate limits", "Idempotency", "Versioning", "Customers", "Invoices", "Payments", "Refunds", "Disputes", "Payouts", "Balances", "Events", "Files", "Search", "Metadata", "Expanding objects", "Testing", "Going live", "Security", "Changelog", "SDKs", "CLI", "Accounts", "Subscriptions", "Prices", "Products", "Coupons", "Tax rates", "Reports", "Exports", "Teams", "Roles", "Audit log", "Status page", "Support"}
	var pages []docPage
	for _, t := range titles {
		slug := strings.ReplaceAll(strings.ToLower(t), " ", "-")
		p := docPage{Slug: slug, Title: t, Summary: "How " + strings.ToLower(t) + " work in the Acme API."}
		for i := range 4 {
			p.Body = append(p.Body, fmt.Sprintf("%s, part %d: the Acme API handles %s through plain HTTPS requests with JSON bodies; each request carries a token, and every answer names the request's id for support.", t, i+1, strings.ToLower(t)))
		}
		if t == "Rate limits" {
			p.Summary = "How many requests a token may send, and what happens past the limit."
			p.Body[2] = "The API allows 600 requests per minute per token; past that it answers 429 with a Retry-After header."
		}
		pages = append(pages, p)
	}
	return pages
}

type activity struct{ Date, Customer, Event, Amount string }

func activities() []activity {
	var a []activity
	events := []string{"Invoice paid", "Invoice sent", "Refund issued", "Customer created"}
	customers := []string{"Initech", "Globex", "Umbrella", "Hooli", "Stark Industries", "Wayne Enterprises"}
	for i := range 30 {
		a = append(a, activity{fmt.Sprintf("2026-11-%02d", 30-i), customers[i%len(customers)], events[i%len(events)], fmt.Sprintf("$%d.00", 100+i*53)})
	}
	return a
}

type photo struct {
	N       int
	Alt, By string
}

func photos() []photo {
	subjects := []string{"A red kayak on a lake", "Pine trees in fog", "A market stall of oranges", "A cat asleep on a chair", "Snow on a mountain ridge", "A tram in the rain", "Sunflowers by a fence", "A harbour at dawn"}
	people := []string{"Ines Duarte", "Tomás Reyes", "Hana Sato", "Olu Adeyemi", "Priya Nair", "Jonas Berg"}
	var ps []photo
	for i := range 60 {
		p := photo{N: i + 1, Alt: subjects[i%len(subjects)], By: people[i%len(people)]}
		if p.N == 37 {
			p.Alt, p.By = "A lighthouse at dusk", "Mirela Costa"
		}
		ps = append(ps, p)
	}
	return ps
}

var galleryIcons = []string{"Upload", "Download", "Share", "Favourites", "Grid view", "List view", "Sort", "Filter", "Slideshow", "Settings", "Help", "Account"}

// ordersJSON is the single-page app's API answer.
func ordersJSON() []byte {
	type order struct {
		ID           int
		Item, Status string
	}
	var os []order
	for i := range 12 {
		os = append(os, order{ID: 5510 + i, Item: fmt.Sprintf("Desk lamp model %d", i+1), Status: "delivered"})
	}
	os[11].Status = "awaiting pickup at depot 7"
	type wire struct {
		ID     int    `json:"id"`
		Item   string `json:"item"`
		Status string `json:"status"`
	}
	var w []wire
	for _, o := range os {
		w = append(w, wire(o))
	}
	b, _ := json.Marshal(w)
	return b
}

func render(name string, data any) []byte {
	var b bytes.Buffer
	if err := taskTemplates.ExecuteTemplate(&b, name, data); err != nil {
		panic(fmt.Sprintf("%s: %v", name, err))
	}
	return b.Bytes()
}

// renderTaskPages fills every page once; other is the second origin, site
// the second site.
func renderTaskPages(other, site string) map[string][]byte {
	p := map[string][]byte{
		"/form":           render("form.html", nil),
		"/table":          render("table.html", map[string]any{"Pages": tablePages, "Rows": tableRows()}),
		"/article":        render("article.html", map[string]any{"Sections": articleSections()}),
		"/spa":            render("spa.html", nil),
		"/frames":         render("frames.html", map[string]any{"Site": site}),
		"/frames/inner":   render("frames_inner.html", map[string]any{"Other": other}),
		"/frames/carrier": render("frames_carrier.html", nil),
		"/frames/ad":      render("frames_ad.html", nil),
		"/shadow":         render("shadow.html", nil),
		"/feed":           render("feed.html", nil),
		"/catalogue":      render("catalogue.html", map[string]any{"Items": catalogueItems300()}),
		"/login":          render("login.html", ""),
		"/login?failed":   render("login.html", "Wrong username or password."),
		"/dashboard":      render("dashboard.html", activities()),
		"/checkout":       render("checkout.html", nil),
		"/gallery":        render("gallery.html", map[string]any{"Icons": galleryIcons, "Photos": photos()}),
	}
	docs := docPages()
	p["/docs"] = render("docs.html", map[string]any{"Title": "Acme API docs", "Pages": docs, "Body": []string{"Welcome. Pick a page on the left or search the docs."}})
	for _, d := range docs {
		p["/docs/page/"+d.Slug] = render("docs.html", map[string]any{"Title": d.Title, "Pages": docs, "Body": d.Body})
	}
	return p
}

// docsSearch renders the search page of the docs for a query.
func docsSearch(q string) []byte {
	docs := docPages()
	var hits []docPage
	lq := strings.ToLower(strings.TrimSpace(q))
	for _, d := range docs {
		if lq != "" && (strings.Contains(strings.ToLower(d.Title), lq) || strings.Contains(strings.ToLower(strings.Join(d.Body, " ")), lq)) {
			hits = append(hits, d)
		}
	}
	return render("docs.html", map[string]any{"Title": "Search", "Query": q, "Pages": docs, "Results": hits})
}

// ordersDelay is how long the single-page app's API takes to answer.
const ordersDelay = 500 * time.Millisecond

// loginCookie is the session cookie the login task's server sets.
const loginCookie = "ledger_session"

// serveSites starts the two origins.
func serveSites() (*sites, error) {
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lnB, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		lnA.Close()
		return nil, err
	}
	s := &sites{
		base:  "http://" + lnA.Addr().String(),
		other: "http://" + lnB.Addr().String(),
		site:  fmt.Sprintf("http://localhost:%d", lnB.Addr().(*net.TCPAddr).Port),
	}
	s.pages = renderTaskPages(s.other, s.site)
	srvA := &http.Server{Handler: s.handler()}
	srvB := &http.Server{Handler: s.handler()}
	go func() { _ = srvA.Serve(lnA) }()
	go func() { _ = srvB.Serve(lnB) }()
	s.stop = func() { _ = srvA.Close(); _ = srvB.Close() }
	return s, nil
}

func (s *sites) handler() http.Handler {
	mux := http.NewServeMux()
	html := func(w http.ResponseWriter, b []byte) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if b, ok := s.pages[r.URL.Path]; ok {
			html(w, b)
			return
		}
		if r.URL.Path == "/favicon.ico" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		html(w, []byte(`<!doctype html><title>Elsewhere</title><h1>Elsewhere</h1>`))
	})
	mux.HandleFunc("GET /api/orders", func(w http.ResponseWriter, r *http.Request) {
		// A slow API: the app renders well after the load event.
		select {
		case <-time.After(ordersDelay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ordersJSON())
	})
	mux.HandleFunc("GET /docs/search", func(w http.ResponseWriter, r *http.Request) {
		html(w, docsSearch(r.URL.Query().Get("q")))
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("username") != "ada" || r.PostFormValue("password") != "lovelace" {
			html(w, s.pages["/login?failed"])
			return
		}
		http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "ok", Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/dashboard", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		if c, err := r.Cookie(loginCookie); err != nil || c.Value != "ok" {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		html(w, s.pages["/dashboard"])
	})
	mux.HandleFunc("GET /img/{n}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="120"><rect width="160" height="120" fill="#%06x"/></svg>`, len(r.PathValue("n"))*0x334455%0xffffff)
	})
	return mux
}
