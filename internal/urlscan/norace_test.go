//go:build !race

package urlscan

// raceEnabled: see race_test.go.
const raceEnabled = false
