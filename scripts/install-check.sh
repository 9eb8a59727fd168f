#!/usr/bin/env bash
# make install-check: the repository's modules install as their users get
# them, from a module proxy, with no network for our own modules.
#   1. bench/modproxy writes every module of the repository (every go.mod
#      outside testdata), as it is in the working tree, into a proxy in a
#      directory, at a pseudo-version of HEAD; in the proxy the modules
#      require each other at that version.
#   2. In an empty module cache, outside the workspace:
#      go install github.com/hybroute/hybroute/cmd/hybroute@VERSION, and
#      the binary's `hybroute version` prints VERSION;
#   3. a fresh module gets github.com/hybroute/hybroute@VERSION and builds
#      the README's example (the code block between the example:start and
#      example:end markers, inside the program those markers hold).
# Third-party modules come from this machine's module cache (then from
# the usual proxy), where the builds before this one left them, so that
# they are compiled once, not again for this check. Our own modules are in
# no checksum database: GONOSUMDB names them. Their versions made here
# are removed from the module cache before and after, so that a version
# of a dirty working tree never stands for its commit's.
set -euo pipefail
started=$SECONDS
trap 'echo "install-check: took $((SECONDS - started)) s"' EXIT
cd "$(dirname "$0")/.."
GO=${GO:-go}
export GOWORK=$PWD/go.work
source scripts/modules.sh

commit_time=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)
version=v0.0.0-$commit_time-$(git rev-parse --short=12 HEAD)
rfc3339=$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ HEAD)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; echo "install-check: took $((SECONDS - started)) s"' EXIT
mapfile -t modules < <(repo_modules)
echo "install-check: ${modules[*]} at $version"
$GO run ./bench/modproxy -out "$tmp/proxy" -version "$version" -time "$rfc3339" "${modules[@]}"

modcache=$($GO env GOMODCACHE)
forget() { # removes our modules at $version from the module cache
	local ours=$modcache/github.com/hybroute dl=$modcache/cache/download/github.com/hybroute d
	if [ -d "$ours" ]; then
		while IFS= read -r d; do
			chmod -R u+w "$d" && rm -rf "$d"
		done < <(find "$ours" -type d -name "*@$version" -prune)
	fi
	if [ -d "$dl" ]; then
		chmod -R u+w "$dl"
		find "$dl" -path "*/@v/$version.*" -delete
		find "$dl" -path "*/@v/list" -exec sed -i "/^$version\$/d" {} +
	fi
}
forget
trap 'forget; rm -rf "$tmp"; echo "install-check: took $((SECONDS - started)) s"' EXIT
export GOWORK=off GOFLAGS=-mod=mod
export GOPROXY="file://$tmp/proxy,$($GO env GOPROXY)"
export GONOSUMDB=github.com/hybroute GOBIN=$tmp/bin

$GO install "github.com/hybroute/hybroute/cmd/hybroute@$version"
got=$("$tmp/bin/hybroute" version)
if [ "$got" != "hybroute $version" ]; then
	echo "install-check: hybroute version printed \"$got\", want \"hybroute $version\"" >&2
	exit 1
fi
echo "install-check: go install .../cmd/hybroute@$version: $got"

app=$tmp/app
mkdir -p "$app"
# The program: the start marker's comment from its package line on, the
# code block, the end marker's comment, in that order.
awk '
	/^<!-- example:start/ { part = "prose"; next }
	part == "prose" && /^package / { part = "start" }
	part == "prose"                { next }
	/^<!-- example:end/   { part = "end"; next }
	part == "start" && /^-->/    { part = "code"; next }
	part == "code" && /^```go/   { next }
	part == "code" && /^```/     { part = ""; next }
	part == "end" && /^-->/      { part = ""; done = 1; next }
	part != ""                   { print }
	END { if (!done) { print "install-check: README.md has no example:start ... example:end" > "/dev/stderr"; exit 1 } }
' README.md >"$app/main.go"
(
	cd "$app"
	$GO mod init example.com/app >/dev/null 2>&1
	$GO get "github.com/hybroute/hybroute@$version"
	$GO build -o /dev/null . || { echo "install-check: the README's example did not build; the program was:" >&2; cat -n main.go >&2; exit 1; }
)
echo "install-check: the README's example builds against github.com/hybroute/hybroute@$version"
