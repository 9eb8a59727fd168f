package agent

import (
	"strings"

	"github.com/hybroute/hybroute/agent/internal/modeltext"
	"github.com/hybroute/hybroute/agent/internal/snapshot"
)

// snapshotArgs are browser_snapshot's arguments.
type snapshotArgs struct {
	Depth *int   `json:"depth"`
	Ref   string `json:"ref"`
	Find  string `json:"find"`
	File  string `json:"file"`
}

// snapshotSchema is browser_snapshot's input schema.
const snapshotSchema = `{"type":"object","properties":{` +
	`"depth":{"type":"integer","minimum":1,"description":"Show only this many levels of the tree (1: the top level); deeper parts are counted, not shown"},` +
	`"ref":{"type":"string","description":"Show only the subtree of this element, by its ref from the last snapshot, e.g. e12"},` +
	`"find":{"type":"string","description":"Show only the elements whose role, name, value, text or link contains this text (any case), with everything inside them, the whole table row, list item or form around them (and the table's header row), and the elements above"},` +
	`"file":{"type":"string","description":"Write the snapshot to this file name in the directory the operator allows, instead of returning it; the result says where. Only a plain file name, no directories"}` +
	`},"additionalProperties":false}`

func (a snapshotArgs) options(limit int) (snapshot.Options, error) {
	o := snapshot.Options{Ref: strings.TrimSpace(a.Ref), Find: strings.TrimSpace(a.Find), Limit: limit}
	if a.Depth != nil {
		if *a.Depth < 1 {
			return o, modeltext.Errorf("depth %d: give 1 or more (1 shows the top level only), or leave it out for the whole tree", *a.Depth)
		}
		o.Depth = *a.Depth
	}
	if a.File != "" {
		o.Limit = 0 // a file holds the whole tree
	}
	return o, nil
}
