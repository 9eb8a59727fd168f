// Package storeseam lets the root's tests read and write what a
// store.Memory holds, as a hostile store or one restarted empty would. It
// is no API: package store sets its functions, tests call them.
package storeseam

import "time"

// Record is what a memory store holds of one provider.
type Record struct {
	Until  time.Time            // the back-off window's end
	Reason string               // why the window is open
	Probe  time.Time            // the probe claim's expiry; zero: free
	Slots  map[string]time.Time // holder -> lease expiry
	Epoch  string               // the name of the store's memory of the leases (store.Slots.Epoch)
}

// Edit calls fn with provider's record in m, a *store.Memory, under its
// lock.
var Edit func(m any, provider string, fn func(*Record))

// Forget drops every record m, a *store.Memory, holds, as a FLUSHALL does.
var Forget func(m any)
