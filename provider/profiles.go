package provider

import "maps"

// Profile is the provider's own persistent profile a cloud session
// starts from, the cloud's counterpart of
// [github.com/hybroute/hybroute.WithProfileDir]: a Browserbase
// context (browserSettings.context), a Steel profile (profileId,
// persistProfile) or a Browser Use profile (profileId). The profile lives
// at the provider, made through its own API or dashboard; hybroute only
// names it in each create call.
type Profile struct {
	// ID is the profile every session starts from, unless ByKey names
	// another.
	ID string
	// ByKey, when set, names the profile of a session's cache key (the
	// session key): one profile per key. An empty answer falls back to ID.
	ByKey func(key string) string
	// Persist saves what the session changed back into the profile when it
	// ends (Browserbase's persist, Steel's persistProfile). With Steel and
	// no ID, each session makes a new profile, which Steel names in its
	// answer. Browser Use has no such switch: a profile is read, and saved
	// as Browser Use's own settings say.
	Persist bool
}

// WithProfile makes every cloud session of a [Browserbase],
// [Steel] or [BrowserUse] client start from the provider's persistent
// profile p, in the field each provider's create call takes. Its fields
// win over the same fields in [WithSessionParams] and
// [WithBrowserUseSession]; the other fields of a browserSettings object
// in WithSessionParams are kept. Other clients ignore it.
func WithProfile(p Profile) Option {
	return func(c *config) { c.profile = p }
}

// idFor is the profile of a session's cache key.
func (p Profile) idFor(key string) string {
	if p.ByKey != nil {
		if id := p.ByKey(key); id != "" {
			return id
		}
	}
	return p.ID
}

// browserbaseContext sets browserSettings.context of a Browserbase create
// body, keeping the other browser settings the params gave.
func (p Profile) browserbaseContext(body map[string]any, key string) {
	id := p.idFor(key)
	if id == "" {
		return
	}
	settings := map[string]any{}
	if old, ok := body["browserSettings"].(map[string]any); ok {
		settings = maps.Clone(old)
	}
	settings["context"] = map[string]any{"id": id, "persist": p.Persist}
	body["browserSettings"] = settings
}

// steelProfile sets profileId and persistProfile of a Steel create body.
func (p Profile) steelProfile(body map[string]any, key string) {
	if id := p.idFor(key); id != "" {
		body["profileId"] = id
	}
	if p.Persist {
		body["persistProfile"] = true
	}
}

// browserUseProfile sets profileId of a Browser Use create body.
func (p Profile) browserUseProfile(body map[string]any, key string) {
	if id := p.idFor(key); id != "" {
		body["profileId"] = id
	}
}
