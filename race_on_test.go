//go:build race

package hybroute

// raceEnabled reports a test binary built with -race.
const raceEnabled = true
