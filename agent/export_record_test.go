package agent

// RecordedFrames counts the frames the record of sessionKey keeps so far
// (0 for a session the toolset does not have, or does not record).
func RecordedFrames(t *Toolset, sessionKey string) int {
	t.mu.Lock()
	s := t.sessions[sessionKey]
	t.mu.Unlock()
	if s == nil || s.rec == nil {
		return 0
	}
	return s.rec.Frames()
}
