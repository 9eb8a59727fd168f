package hybroute

// The default viewport of the local browser's tabs. Headless Chromium's own
// is what is left of an 800x600 window (780x437), smaller than any page is
// designed for; agents screenshot and click in it. Every local tab gets it
// when it is made (internal/browsertab's SetViewport), so a call pays
// nothing for it.
const (
	DefaultViewportWidth  = 1280
	DefaultViewportHeight = 720
)
