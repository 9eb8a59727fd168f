package provider

import "context"

// RESTDriver drives one tab of a browser server through its REST API, for
// a provider whose browser has no CDP endpoint ([Camofox]): its sessions
// carry one in [Session].REST and leave CDPURL empty. Each method that can
// move the page returns the URL the server reports the tab on afterwards
// ("" when the answer named none: the router then keeps the URL it knew).
// A Router serialises the calls of one session, checks every URL a method
// returns against its rules, and calls Reset on a tab that landed where it
// must not be.
type RESTDriver interface {
	// Navigate opens rawURL in the tab.
	Navigate(ctx context.Context, rawURL string) (string, error)
	// Snapshot returns the page's accessibility tree as text, each
	// interactive element with its ref (e1, e2, …), and the page URL.
	Snapshot(ctx context.Context) (text, pageURL string, err error)
	// Click clicks the element of ref (from the last snapshot).
	Click(ctx context.Context, ref string) (string, error)
	// Type replaces the text of the field of ref; submit presses Enter.
	Type(ctx context.Context, ref, text string, submit bool) (string, error)
	// Press presses a key (Enter, ArrowDown, …) in the page.
	Press(ctx context.Context, key string) (string, error)
	// Scroll scrolls the page by about a screen: up, down, left or right.
	Scroll(ctx context.Context, direction string) (string, error)
	// Back goes back in the tab's history.
	Back(ctx context.Context) (string, error)
	// Screenshot returns a PNG of the viewport, or of the whole page.
	Screenshot(ctx context.Context, fullPage bool) ([]byte, error)
	// URL asks the server where the tab is now.
	URL(ctx context.Context) (string, error)
	// Reset replaces the tab with a fresh blank one in the same browser
	// session (its cookies kept): what a refused page is sent away with.
	Reset(ctx context.Context) error
	// TabID is the server's id of the current tab.
	TabID() string
}
