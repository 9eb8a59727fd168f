#!/usr/bin/env bash
# make lint: the checks before the tests, on every module of the workspace
# (go.work lists them, and every go.mod of the repository is listed there).
#   gofmt -l            prints nothing
#   go.work             lists every module; the modules require each other
#                       at the placeholder version only, which go.work
#                       replaces by the working tree; no go.mod replaces
#   cmd/hybroute        imports no test stand-in
#   go mod tidy         go.mod and go.sum are tidy (see tidy below)
#   go vet, staticcheck in the workspace, as make test builds
#   govulncheck         when its vulnerability database answers; skipped,
#                       saying so, when it cannot be reached (CI reaches the
#                       package registries only)
set -euo pipefail
trap 'echo "lint: took $SECONDS s"' EXIT
cd "$(dirname "$0")/.."
GO=${GO:-go}
STATICCHECK=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}
GOVULNCHECK=${GOVULNCHECK:-golang.org/x/vuln/cmd/govulncheck@v1.9.0}
GOVULNDB=${GOVULNDB:-https://vuln.go.dev}
export GOWORK=$PWD/go.work
source scripts/modules.sh
mapfile -t modules < <(work_modules)

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "lint: gofmt -l lists files that are not gofmt'ed:" >&2
	echo "$unformatted" >&2
	exit 1
fi
check_workspace
# The server users install runs on no test stand-in (internal/*test,
# internal/testenv): those are the tests' to import.
deps=$($GO list -deps ./cmd/hybroute)
stand_ins=$(grep -E '^github.com/hybroute/hybroute/internal/([a-z]+test|testenv)$' <<<"$deps" || true)
if [ -n "$stand_ins" ]; then
	echo "lint: cmd/hybroute imports test stand-ins: $stand_ins" >&2
	exit 1
fi

# go mod tidy works on one module and ignores go.work, so it would look for
# the siblings at the placeholder version, which no proxy has. It runs on a
# copy of go.mod (-modfile) that replaces each sibling at that version by
# its directory, as the go.mod files did before go.work; that copy, less
# the replaces, and its go.sum must equal the module's own. (A file proxy
# of the working tree, as make install-check builds, would serve the
# siblings, but under a version that changes with every commit, which
# go.sum would then have to name.)
tidy() { # module dir
	local m=$1 tmp
	tmp=$(mktemp -d)
	cp "$m/go.mod" "$tmp/go.mod"
	[ ! -e "$m/go.sum" ] || cp "$m/go.sum" "$tmp/go.sum"
	local replaces=() drops=() path dir
	while read -r path dir; do
		replaces+=("-replace=$path@$PLACEHOLDER=$PWD/$dir")
		drops+=("-dropreplace=$path@$PLACEHOLDER")
	done < <(module_paths)
	$GO mod edit "${replaces[@]}" "$tmp/go.mod"
	(cd "$m" && GOWORK=off $GO mod tidy -modfile="$tmp/go.mod")
	$GO mod edit "${drops[@]}" "$tmp/go.mod"
	local rc=0
	diff -u "$m/go.mod" "$tmp/go.mod" || rc=1
	if [ -e "$tmp/go.sum" ] || [ -e "$m/go.sum" ]; then
		diff -u "$m/go.sum" "$tmp/go.sum" || rc=1
	fi
	rm -rf "$tmp"
	[ $rc = 0 ] || echo "lint: $m: go.mod or go.sum is not tidy (the diff above is what go mod tidy would change)" >&2
	return $rc
}
for m in "${modules[@]}"; do
	echo "lint: $m: tidy, vet, staticcheck"
	tidy "$m"
	(cd "$m" && $GO vet ./... && $GO run "$STATICCHECK" ./...)
done

# The database is probed first, for a few seconds: without it govulncheck
# could only fail, or wait on the network for much longer.
reachable() {
	case $GOVULNDB in
	file://*) [ -d "${GOVULNDB#file://}" ] ;;
	*) if command -v curl >/dev/null 2>&1; then
		curl -fsS --max-time 5 -o /dev/null "$GOVULNDB/index/db.json.gz" 2>/dev/null
	else
		local hostport=${GOVULNDB#*://}
		hostport=${hostport%%/*}
		timeout 5 bash -c "</dev/tcp/${hostport%%:*}/443" 2>/dev/null
	fi ;;
	esac
}
if ! reachable; then
	echo "lint: govulncheck skipped: its vulnerability database ($GOVULNDB) cannot be reached from this machine"
	exit 0
fi
for m in "${modules[@]}"; do
	echo "lint: $m: govulncheck"
	rc=0
	(cd "$m" && timeout 600 $GO run "$GOVULNCHECK" -db "$GOVULNDB" ./...) || rc=$?
	case $rc in
	0) ;;
	124) echo "lint: govulncheck skipped for $m: no answer within 10 minutes" ;;
	*) exit "$rc" ;;
	esac
done
