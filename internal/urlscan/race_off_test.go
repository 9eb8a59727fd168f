//go:build !race

package urlscan

// hostileSize is the larger input of TestScanURLsLinearOnHostileInput.
const hostileSize = 1 << 20
