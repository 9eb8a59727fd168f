package cloudtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The recordings of the fakes, answered as each provider's SDK gives them:
//
//   - Browserbase (browserbase/sdk-node src/resources/sessions; sessions
//     are recorded unless "browserSettings.recordSession" is false): GET
//     /v1/sessions/{id}/replays answers {"pages": [{"id", "url"}]}, url an
//     HLS playlist.
//   - Browser Use (browser-use/sdk docs/cloud/openapi/v{2,3,4}.json,
//     BrowserSessionView): GET /api/{v}/browsers/{id} answers the session's
//     view, whose "recordingUrl" is null until the session has ended, and
//     stays null for a session created without "enableRecording": true.
//   - Anchor (anchorbrowser/AnchorBrowser-SDK-Typescript
//     src/resources/sessions/recordings; recording is on by default): GET
//     /v1/sessions/{id}/recordings answers {"data": {"count", "items":
//     [{"id", "is_primary", "file_link", "suggested_file_name", "duration",
//     "size", "created_at"}]}}.
//   - Kernel (kernel/kernel-go-sdk browserreplay.go): POST
//     /browsers/{id}/replays starts a recording and answers {"replay_id",
//     "replay_view_url", "started_at"}; GET /browsers/{id}/replays lists
//     them, [{"replay_id", "replay_view_url", "started_at",
//     "finished_at"}].
//   - Hyperbrowser (hyperbrowserai/node-sdk src/services/sessions.ts,
//     src/types/session.ts): GET /api/session/{id}/recording-url answers
//     {"status", "recordingUrl", "error"}: "not_enabled" with a null URL
//     for a session created without "enableWebRecording": true.
//   - Steel (docs.steel.dev "Past Sessions"; every session is recorded):
//     GET /v1/sessions/{id}/hls with steel-api-key answers the session's
//     HLS playlist (application/vnd.apple.mpegurl); a session it does not
//     know is a 404.

// FakeReplayURL is the recording URL the fake of kind answers for
// session id (Kernel's: its first replay's view URL).
func FakeReplayURL(kind Kind, id string) string {
	switch kind {
	case Browserbase:
		return "https://www.browserbase.invalid/replays/" + id + "/page-1/playlist.m3u8"
	case BrowserUse, BrowserUseV2, Nous:
		return "https://recordings.browser-use.invalid/" + id + ".mp4"
	case Anchor:
		return "https://recordings.anchorbrowser.invalid/" + id + "/primary.mp4"
	case Kernel:
		return "https://replays.kernel.invalid/" + id + "/replay-1"
	case Hyperbrowser:
		return "https://recordings.hyperbrowser.invalid/" + id + ".json"
	case Steel:
		return "/v1/sessions/" + id + "/hls" // on the fake's own URL
	}
	return ""
}

// noteRecording marks session id, just made from the create body, as
// recorded when its kind records it: by default (Browserbase, Anchor), or
// when the body asked (Browser Use's enableRecording, Hyperbrowser's
// enableWebRecording).
func (s *Server) noteRecording(id string, body []byte) {
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	on := false
	switch s.Kind {
	case Browserbase, Anchor, Steel:
		on = true
	case BrowserUse, BrowserUseV2, Nous:
		on = in["enableRecording"] == true
	case Hyperbrowser:
		on = in["enableWebRecording"] == true
	}
	s.mu.Lock()
	s.recorded[id] = on
	s.mu.Unlock()
}

// recording reports whether session id was made, and recorded.
func (s *Server) recording(id string) (made, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	on, made = s.recorded[id]
	return made, on
}

// serveReplay answers the kind's recording calls; false: r is not one.
func (s *Server) serveReplay(w http.ResponseWriter, r *http.Request) bool {
	switch s.Kind {
	case Browserbase:
		id, ok := pathID(http.MethodGet, "/v1/sessions/", "/replays")(r)
		if !ok {
			return false
		}
		if !s.authorized(w, r, "X-BB-API-Key") {
			return true
		}
		made, on := s.recording(id)
		if !made {
			writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Session not found"))
			return true
		}
		pages := []any{}
		if on {
			pages = append(pages, map[string]any{"id": "page-1", "url": FakeReplayURL(s.Kind, id)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"pages": pages})
		return true
	case BrowserUse, BrowserUseV2, Nous:
		_, path, mounted := s.browserUseVersion(r.URL.Path)
		id, ok := strings.CutPrefix(path, "/browsers/")
		if !mounted || r.Method != http.MethodGet || !ok || id == "" || strings.Contains(id, "/") {
			return false
		}
		if !s.authorized(w, r, "X-Browser-Use-API-Key") {
			return true
		}
		made, on := s.recording(id)
		if !made {
			writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Browser session not found"))
			return true
		}
		ended := !s.Live(id)
		out := map[string]any{"id": id, "status": "active", "recordingUrl": nil, "finishedAt": nil}
		if ended {
			out["status"], out["finishedAt"] = "stopped", time.Now().UTC().Format(time.RFC3339)
			if on {
				out["recordingUrl"] = FakeReplayURL(s.Kind, id)
			}
		}
		writeJSON(w, http.StatusOK, out)
		return true
	case Anchor:
		id, ok := pathID(http.MethodGet, "/v1/sessions/", "/recordings")(r)
		if !ok {
			return false
		}
		if !apiShapes[s.Kind].authorized(r, s.APIKey) {
			s.unauthorized(w)
			return true
		}
		made, on := s.recording(id)
		if !made {
			writeRaw(w, http.StatusNotFound, apiShapes[s.Kind].errorBody(http.StatusNotFound, "Session not found"))
			return true
		}
		items := []any{}
		if on {
			items = append(items, map[string]any{"id": "rec-" + id, "is_primary": true, "file_link": FakeReplayURL(s.Kind, id),
				"suggested_file_name": id + ".mp4", "duration": "00:00:05", "size": 1024, "created_at": time.Now().UTC().Format(time.RFC3339)})
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"count": len(items), "items": items}})
		return true
	case Kernel:
		id, ok := pathID(r.Method, "/browsers/", "/replays")(r)
		if !ok || (r.Method != http.MethodGet && r.Method != http.MethodPost) {
			return false
		}
		if !apiShapes[s.Kind].authorized(r, s.APIKey) {
			s.unauthorized(w)
			return true
		}
		if made, _ := s.recording(id); !made {
			writeRaw(w, http.StatusNotFound, apiShapes[s.Kind].errorBody(http.StatusNotFound, "browser not found"))
			return true
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if r.Method == http.MethodPost {
			n := strconv.Itoa(len(s.replays[id]) + 1)
			rep := map[string]any{"replay_id": "replay-" + n,
				"replay_view_url": strings.TrimSuffix(FakeReplayURL(s.Kind, id), "1") + n,
				"started_at":      time.Now().UTC().Format(time.RFC3339), "finished_at": nil}
			s.replays[id] = append(s.replays[id], rep)
			writeJSON(w, http.StatusOK, rep)
			return true
		}
		list := []any{}
		for _, rep := range s.replays[id] {
			list = append(list, rep)
		}
		writeJSON(w, http.StatusOK, list)
		return true
	case Steel:
		id, ok := pathID(http.MethodGet, "/v1/sessions/", "/hls")(r)
		if !ok {
			return false
		}
		if !s.authorized(w, r, "steel-api-key") {
			return true
		}
		if made, _ := s.recording(id); !made {
			writeRaw(w, http.StatusNotFound, s.errorBody(http.StatusNotFound, "Session not found"))
			return true
		}
		w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
		_, _ = io.WriteString(w, "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:5\n#EXTINF:5.0,\nsegment-0.ts\n#EXT-X-ENDLIST\n")
		return true
	case Hyperbrowser:
		id, ok := pathID(http.MethodGet, "/api/session/", "/recording-url")(r)
		if !ok {
			return false
		}
		if !apiShapes[s.Kind].authorized(r, s.APIKey) {
			s.unauthorized(w)
			return true
		}
		made, on := s.recording(id)
		if !made {
			writeRaw(w, http.StatusNotFound, apiShapes[s.Kind].errorBody(http.StatusNotFound, "Session not found"))
			return true
		}
		out := map[string]any{"status": "not_enabled", "recordingUrl": nil, "error": nil}
		if on {
			out["status"], out["recordingUrl"] = "completed", FakeReplayURL(s.Kind, id)
		}
		writeJSON(w, http.StatusOK, out)
		return true
	}
	return false
}
