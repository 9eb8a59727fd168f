//go:build !linux

package hybroute

// killProcessesWith finds nothing off Linux: there is no /proc to search.
// chromedp's allocator still kills the browser process itself.
func killProcessesWith(arg []byte) int { return 0 }
