// Package statesync moves a session key's storage state (package state) in
// and out of its browser sessions: cookies through the browser context,
// local and session storage through a page of each origin, the origins a
// session's pages went to, the split of a state into what one browser may
// hold and what it may not, and the states loaded for each key.
//
// It decides nothing: which hosts a browser may hold, and which origins a
// page may visit, are the root's rules, lent as functions. Its pages of
// other origins are navigations the guard answers with a blank document
// (Browser.Stub), so nothing goes to the sites.
package statesync
