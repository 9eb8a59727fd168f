// Package browsertab holds the mechanics of a browser tab a session drives,
// whichever browser it is on: how a call's context is bound to a tab, how
// a tab is opened and undone, how a wedged one is told from a busy one,
// and the tab's viewport. It holds no rule about where a URL may go and
// knows nothing of sessions, plans or providers: the root lends a session
// its tab and decides everything else.
package browsertab
