// Package browsertab holds the mechanics of a browser tab a session drives,
// whichever browser it is on: the Handle a session keeps of its tab (the
// tab, behind one interface for every kind, and the records of what its
// pages did), how a call's context is bound to a tab, how a tab is opened
// and undone, how a wedged one is told from a busy one, how its JavaScript
// dialogs are answered and recorded, which other pages of the session are
// attached, a browser context's cookies and storage, and the tab's
// viewport.
//
// It holds no rule about where a URL may go and knows nothing of plans,
// routes, providers or the session cache: the root lends each call the
// session's handle and decides everything else. Its data types (Dialog,
// DialogPolicy, Cookie, Item) are plain copies of the root's public ones,
// which convert to and from them.
package browsertab
