package cdpcompat

import "github.com/chromedp/cdproto/network"

// OfflineRules is how a browser takes URL rules whose requests fail as if
// offline: Network.emulateNetworkConditionsByRule, the one DevTools measure
// that stops a WebSocket handshake (Fetch never pauses one, and
// Network.setBlockedURLs lets it through on every major measured, 131 to
// 156). Its name shows up in logs and in ErrUnsupportedBrowser's text.
type OfflineRules int

const (
	// RulesPerCondition: offline is a field of each rule (Chromium 153 on).
	RulesPerCondition OfflineRules = iota
	// RulesTopLevel: offline is the command's own parameter and applies to
	// the requests the rules match, not to the others (Chromium 143 to
	// 152, measured on 143 and 148: a WebSocket to an unmatched host
	// still opens).
	RulesTopLevel
	// RulesNone: the browser has no such command (before Chromium 143).
	RulesNone
)

func (o OfflineRules) String() string {
	switch o {
	case RulesPerCondition:
		return "per_condition"
	case RulesTopLevel:
		return "top_level_offline"
	case RulesNone:
		return "none"
	}
	return "unknown"
}

// FirstOfflineRules is the shape to try first on a browser of the given
// major: the one its major introduced, or the newest for a browser that
// names none.
func FirstOfflineRules(major int) OfflineRules {
	switch {
	case major == 0 || major >= 153:
		return RulesPerCondition
	case major >= 143:
		return RulesTopLevel
	}
	return RulesNone
}

// Older is the shape to try when the browser answered o with a shape error
// (IsShapeError): the next older one, RulesNone at the end.
func (o OfflineRules) Older() OfflineRules {
	if o >= RulesNone {
		return RulesNone
	}
	return o + 1
}

// OfflineParams are the parameters of Network.emulateNetworkConditionsByRule
// in shape o that make every request matching one of patterns (URLPattern
// syntax) fail as offline and leave every other request alone. With
// p2pOffline, in shape RulesPerCondition, the target's peer-to-peer
// sockets are offline too: a rule that matches every URL and changes
// nothing follows the patterns, and a rule with no pattern, offline, comes
// last. The first rule a request matches wins, and a rule with no pattern
// is the one Chromium applies to p2p sockets (which have no URL); measured
// on Chromium 156, it stops their UDP datagrams, not their TCP connects.
// The older shape has no such rule (its offline is the whole command's):
// p2pOffline is ignored there. o must not be RulesNone.
func OfflineParams(o OfflineRules, patterns []string, p2pOffline bool) any {
	conds := make([]*network.Conditions, 0, len(patterns)+2)
	for _, p := range patterns {
		conds = append(conds, &network.Conditions{URLPattern: p, Offline: o == RulesPerCondition,
			DownloadThroughput: -1, UploadThroughput: -1})
	}
	if o == RulesTopLevel {
		return topLevelParams{Offline: true, MatchedNetworkConditions: conds}
	}
	if p2pOffline {
		conds = append(conds,
			&network.Conditions{URLPattern: "*://*:*/*", DownloadThroughput: -1, UploadThroughput: -1},
			&network.Conditions{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
	}
	return network.EmulateNetworkConditionsByRuleParams{MatchedNetworkConditions: conds}
}

// topLevelParams is the command's shape on Chromium 143 to 152, which the
// protocol package no longer has. The rules' own offline field is sent as
// false there, which those majors ignore.
type topLevelParams struct {
	Offline                  bool                  `json:"offline"`
	MatchedNetworkConditions []*network.Conditions `json:"matchedNetworkConditions"`
}
