//go:build race

package urlscan

// raceEnabled: the test binary runs under the race detector, which makes
// the single-goroutine scanner tens of times slower without finding
// anything more in it; the cost checks then run on smaller inputs.
const raceEnabled = true
