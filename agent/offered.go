package agent

import (
	"fmt"
	"strings"
)

// Need is the setting a tool needs before a Toolset offers it: a tool
// that cannot work in the toolset's configuration is not in Tools, so a
// model is never told about it.
type Need string

// The needs of the tools. A tool with none is always offered.
const (
	NeedsNothing Need = ""
	// NeedsStateDir: a state directory ([WithStateDir]).
	NeedsStateDir Need = "state-dir"
	// NeedsUploadDir: an upload directory ([WithUploadDir]).
	NeedsUploadDir Need = "upload-dir"
	// NeedsDownloadDir: a download directory ([WithDownloadDir]).
	NeedsDownloadDir Need = "download-dir"
	// NeedsHeldDialogs: a Router whose dialog policy holds dialogs for the
	// model (hybroute.DialogPolicy.Hold); under any other policy dialogs
	// are answered as they open.
	NeedsHeldDialogs Need = "held-dialogs"
	// NeedsSecrets: secrets to type ([WithSecrets]).
	NeedsSecrets Need = "secrets"
	// NeedsHandoff: a live view to hand the page to a person ([WithHandoff]).
	NeedsHandoff Need = "handoff"
)

// toolNeeds are the tools that need a setting; every other tool works in
// any configuration.
var toolNeeds = map[string]Need{
	ToolStateSave:    NeedsStateDir,
	ToolStateLoad:    NeedsStateDir,
	ToolFileUpload:   NeedsUploadDir,
	ToolDownloads:    NeedsDownloadDir,
	ToolPDFSave:      NeedsDownloadDir,
	ToolHandleDialog: NeedsHeldDialogs,
	ToolTypeSecret:   NeedsSecrets,
	ToolHandoff:      NeedsHandoff,
}

// CatalogTool is one tool the package defines, with the setting it needs
// to be offered.
type CatalogTool struct {
	Tool
	Needs Need
}

// Catalog is every tool the package defines, offered or not, in the order
// of Tools, each with what it needs: the source of any list of the tools
// (a command's help, the docs), so that none drifts from the toolset.
func Catalog() []CatalogTool {
	out := make([]CatalogTool, len(toolDefs))
	for i, d := range toolDefs {
		out[i] = CatalogTool{Tool: d.tool(), Needs: toolNeeds[d.name]}
	}
	return out
}

func (d *toolDef) tool() Tool {
	return Tool{Name: d.name, Description: d.desc, InputSchema: []byte(d.schema)}
}

// has reports whether the toolset's configuration meets n.
func (t *Toolset) has(n Need) bool {
	switch n {
	case NeedsStateDir:
		return t.cfg.stateDir != ""
	case NeedsUploadDir:
		return t.cfg.uploadDir != ""
	case NeedsDownloadDir:
		return t.cfg.downloadDir != ""
	case NeedsHeldDialogs:
		return t.heldDialogs
	case NeedsSecrets:
		return t.cfg.secrets.Len() > 0
	case NeedsHandoff:
		return t.cfg.handoff != nil
	}
	return true
}

// offers reports whether the toolset offers the tool name.
func (t *Toolset) offers(name string) bool { return t.has(toolNeeds[name]) }

// offeredNames lists the tools the toolset offers, for a model that named
// another.
func (t *Toolset) offeredNames() string {
	var names []string
	for _, d := range toolDefs {
		if t.offers(d.name) {
			names = append(names, d.name)
		}
	}
	return strings.Join(names, ", ")
}

// notOffered is the answer to a call of a tool the toolset defines but
// does not offer: the model was never told of it, and learns why it is off.
func (t *Toolset) notOffered(name string) Result {
	why := map[Need]string{
		NeedsStateDir:    "the operator set no state directory (hybroute mcp --state-dir)",
		NeedsUploadDir:   "the operator set no upload directory (hybroute mcp --upload-dir)",
		NeedsDownloadDir: "the operator set no download directory (hybroute mcp --download-dir)",
		NeedsHeldDialogs: "dialogs are answered as they open (hybroute mcp --dialogs model lets the model answer them), and results list them",
		NeedsSecrets:     "the operator gave no secrets (hybroute mcp --secrets)",
		NeedsHandoff:     "the operator serves no live view (hybroute mcp --http serves one)",
	}[toolNeeds[name]]
	return toolError(fmt.Sprintf("%s is off on this server: %s. The tools are %s.", name, why, t.offeredNames()))
}
