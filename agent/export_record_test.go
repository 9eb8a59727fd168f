package agent

// RecordedFrames counts the frames the record of sessionKey keeps so far,
// and those it took (0s for a session the toolset does not have, or does
// not record).
func RecordedFrames(t *Toolset, sessionKey string) (kept, taken int) {
	s := t.sessionOf(sessionKey)
	if s == nil || s.rec == nil {
		return 0, 0
	}
	return s.rec.Frames()
}

// HideFromRecord hides the tab of sessionKey's page from its record, as
// a tool that types a secret there does.
func HideFromRecord(t *Toolset, sessionKey string) {
	if s := t.sessionOf(sessionKey); s != nil {
		s.hideFromRecord(s.pageTarget)
	}
}

func (t *Toolset) sessionOf(key string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[key]
}
