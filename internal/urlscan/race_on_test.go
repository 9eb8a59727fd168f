//go:build race

package urlscan

// hostileSize is the larger input of TestScanURLsLinearOnHostileInput. The
// race detector makes each byte scanned about ten times dearer, and a
// quarter megabyte is still far past every constant bound in the scanner,
// so linear and quadratic growth stay apart.
const hostileSize = 1 << 18
