#!/usr/bin/env bash
# make lint: the checks before the tests, on every module of the workspace
# (go.work lists them). Each module is checked as its users build it, with
# GOWORK=off: its own go.mod, the library through its replace directive.
#   gofmt -l            prints nothing
#   go mod tidy -diff   go.mod and go.sum are tidy
#   go vet, staticcheck
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
# go work edit reads go.work without loading the modules, which GOFLAGS
# such as -mod=mod would forbid in workspace mode.
mapfile -t modules < <($GO work edit -json go.work | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
export GOWORK=off

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "lint: gofmt -l lists files that are not gofmt'ed:" >&2
	echo "$unformatted" >&2
	exit 1
fi
for m in "${modules[@]}"; do
	echo "lint: $m: tidy, vet, staticcheck"
	(cd "$m" && $GO mod tidy -diff && $GO vet ./... && $GO run "$STATICCHECK" ./...)
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
