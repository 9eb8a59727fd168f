package agent

import (
	"strings"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// snapshotArgs are browser_snapshot's arguments.
type snapshotArgs struct {
	Depth  *int   `json:"depth"`
	Ref    string `json:"ref"`
	Find   string `json:"find"`
	File   string `json:"file"`
	Expand string `json:"expand"`
}

// snapshotSchema is browser_snapshot's input schema.
const snapshotSchema = `{"type":"object","properties":{"depth":{"type":"integer","minimum":1,"description":"Levels shown"},"ref":{"type":"string","description":"Only this element's subtree"},"find":{"type":"string","description":"Only what contains this text, with its row, list item or form"},` +
	snapshotFileArg + `"expand":{"type":"string","description":"A fold: f1, or f1:40 from item 40"}}}`

// snapshotFileArg is the file argument, which a toolset with no snapshot
// directory does not offer (Toolset.Tools).
const snapshotFileArg = `"file":{"type":"string","description":"Write to this file in the snapshot directory"},`

func (a snapshotArgs) options(limit int) (snapshot.Options, error) {
	o := snapshot.Options{Ref: strings.TrimSpace(a.Ref), Find: strings.TrimSpace(a.Find), Limit: limit, Expand: strings.TrimSpace(a.Expand)}
	if o.Expand != "" && (o.Ref != "" || o.Find != "" || a.Depth != nil || a.File != "") {
		return o, modeltext.Errorf("expand shows a fold's items by itself: give it without depth, ref, find or file")
	}
	if a.Depth != nil {
		if *a.Depth < 1 {
			return o, modeltext.Errorf("depth %d: give 1 or more (1 shows the top level only), or leave it out for the whole tree", *a.Depth)
		}
		o.Depth = *a.Depth
	}
	if a.File != "" {
		o.Limit = 0 // a file holds the whole tree
		o.Unfolded = true
	}
	return o, nil
}
