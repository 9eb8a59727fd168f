package main

import (
	"strings"

	"github.com/hybroute/hybroute/agent"
)

// The tool lists of "hybroute mcp -h" and of the docs are made from the
// toolset's catalog (agent.Catalog), by the setting each tool needs, so
// that neither names a tool the server does not offer, nor misses one.

// needFlags is the flag of hybroute mcp that meets each need of a tool.
var needFlags = map[agent.Need]string{
	agent.NeedsNothing:     "",
	agent.NeedsStateDir:    "--state-dir",
	agent.NeedsUploadDir:   "--upload-dir",
	agent.NeedsDownloadDir: "--download-dir",
	agent.NeedsHeldDialogs: "--dialogs model",
	agent.NeedsSecrets:     "--secrets",
	agent.NeedsHandoff:     "--http",
}

// needOptions is what meets each need in a program of one's own.
var needOptions = map[agent.Need]string{
	agent.NeedsStateDir:    "agent.WithStateDir",
	agent.NeedsUploadDir:   "agent.WithUploadDir",
	agent.NeedsDownloadDir: "agent.WithDownloadDir",
	agent.NeedsHeldDialogs: "hybroute.WithDialogPolicy(hybroute.DialogPolicy{Hold: true})",
	agent.NeedsSecrets:     "agent.WithSecrets",
	agent.NeedsHandoff:     "agent.WithHandoff(router.LiveViews(...))",
}

// toolGroup is the tools one flag offers ("": those always offered).
type toolGroup struct {
	flag, option string
	names        []string
}

// toolGroups are the catalog's tools by the flag that offers them: those
// always offered first, then each flag in the catalog's order.
func toolGroups() []toolGroup {
	var groups []toolGroup
	index := map[string]int{"": 0}
	groups = append(groups, toolGroup{})
	for _, t := range agent.Catalog() {
		flag, ok := needFlags[t.Needs]
		if !ok {
			flag = "(" + string(t.Needs) + ")" // a need without a flag: TestToolListsMatchTheCatalog fails
		}
		i, seen := index[flag]
		if !seen {
			i = len(groups)
			index[flag] = i
			groups = append(groups, toolGroup{flag: flag, option: needOptions[t.Needs]})
		}
		groups[i].names = append(groups[i].names, t.Name)
	}
	return groups
}

// toolsHelp is the tool list of "hybroute mcp -h".
func toolsHelp() string {
	var b strings.Builder
	b.WriteString("Tools offered:\n")
	for _, g := range toolGroups() {
		head := "  always: "
		if g.flag != "" {
			head = "  with " + g.flag + ": "
		}
		b.WriteString(wrapNames(head, g.names, 78))
	}
	return b.String()
}

// wrapNames writes head and the names, comma-separated, in lines of at
// most width columns, the later lines indented under the first name.
func wrapNames(head string, names []string, width int) string {
	var b strings.Builder
	indent := strings.Repeat(" ", 4)
	line := head
	for i, n := range names {
		if i < len(names)-1 {
			n += ","
		}
		switch {
		case line == head:
			line += n
		case len(line)+1+len(n) > width:
			b.WriteString(line + "\n")
			line = indent + n
		default:
			line += " " + n
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// toolsMarkdown is the tool list of the docs: a table of the tools each
// configuration offers.
func toolsMarkdown() string {
	var b strings.Builder
	b.WriteString("| Offered | Tools |\n|---|---|\n")
	for _, g := range toolGroups() {
		when := "always"
		if g.flag != "" {
			when = "with `" + g.flag + "` (`" + g.option + "`)"
		}
		b.WriteString("| " + when + " | `" + strings.Join(g.names, "`, `") + "` |\n")
	}
	return b.String()
}

// The markers around the generated list in a Markdown file.
const (
	toolsBegin = "<!-- tools: made from agent.Catalog; go test ./cmd/hybroute -run TestToolListsMatchTheCatalog -update rewrites it -->\n"
	toolsEnd   = "<!-- end of tools -->\n"
)
