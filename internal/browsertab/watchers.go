package browsertab

import "sync"

// Watchers watch one tab of a session for as long as it lives: the
// guard's hold on it (which ends by forgetting the tab) and the dialog
// answerer. Each returns when the tab ends.
type Watchers struct{ Guard, Dialogs func() }

// Start runs the watchers on wg, so that the session's owner waits for
// them; or, once it is closed (closed), on their own, since its close
// ends their tab and they end with it.
func (w Watchers) Start(wg *sync.WaitGroup, closed bool) {
	if closed {
		go w.Guard()
		go w.Dialogs()
		return
	}
	wg.Go(w.Guard)
	wg.Go(w.Dialogs)
}

// Ended runs the watchers of a tab that is already ended, so that they
// return at once and the guard forgets the tab now.
func (w Watchers) Ended() {
	w.Guard()
	w.Dialogs()
}
