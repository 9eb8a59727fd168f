#!/usr/bin/env bash
# make bench-anchors: hybroute mcp side by side with the two anchors,
# Playwright MCP and chrome-devtools-mcp, driven by one MCP client
# (bench/hybroute-bench-anchors) over the same scripted session on the same
# loopback pages. The anchors are installed from npm once into a cache
# outside the repository, at the versions below, with no browser download:
# all three drive the system's Chromium.
# make bench-tasks runs it with -tasks: the task suite on the same three.
# Usage: scripts/bench-anchors.sh [flags of hybroute-bench-anchors]
set -euo pipefail
cd "$(dirname "$0")/.."
PLAYWRIGHT_MCP_VERSION=${PLAYWRIGHT_MCP_VERSION:-0.0.83}
DEVTOOLS_MCP_VERSION=${DEVTOOLS_MCP_VERSION:-1.11.0}
cache=${HYBROUTE_ANCHORS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hybroute-anchors}
chromium=${CHROMIUM:-$(command -v chromium || command -v google-chrome)}
mkdir -p "$cache"
stamp="$cache/.installed-$PLAYWRIGHT_MCP_VERSION-$DEVTOOLS_MCP_VERSION"
if [ ! -e "$stamp" ]; then
	echo "bench-anchors: installing @playwright/mcp@$PLAYWRIGHT_MCP_VERSION and chrome-devtools-mcp@$DEVTOOLS_MCP_VERSION into $cache" >&2
	[ -e "$cache/package.json" ] || echo '{"private":true}' >"$cache/package.json"
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 \
		npm install --prefix "$cache" --no-audit --no-fund --silent \
		"@playwright/mcp@$PLAYWRIGHT_MCP_VERSION" "chrome-devtools-mcp@$DEVTOOLS_MCP_VERSION"
	touch "$stamp"
fi
mkdir -p bin
go -C cmd build -o "$PWD/bin/hybroute" ./hybroute
go -C bench build -o "$PWD/bin/hybroute-bench-anchors" ./hybroute-bench-anchors
uptime
exec ./bin/hybroute-bench-anchors \
	-hybroute bin/hybroute \
	-playwright "$cache/node_modules/@playwright/mcp/cli.js" \
	-devtools "$cache/node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js" \
	-chromium "$chromium" "$@"
