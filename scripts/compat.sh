#!/usr/bin/env bash
# make compat: the route, guard, egress and rate-limit fallback tests, and the
# sidecar's process tests (renderers per session, nothing left after a close),
# against each Chromium of a matrix of majors and against the system's full
# Chromium and headless shell, one table row per browser. `make test` runs the
# whole suite on one browser (the headless shell when installed); this is
# where the others get the tests that tell browsers apart. The old builds
# are the headless shells that the npm package @sparticuz/chromium ships
# (bin/chromium.br, brotli), unpacked once into a cache.
# Usage: scripts/compat.sh [--fetch] [MAJOR...]; --fetch only fills the
# cache (CI does that while the tests run). COMPAT_SHELL=0 leaves out the
# headless shell's row: CI sets it, as make test has just run the whole
# suite, these tests included, on that browser.
set -uo pipefail
cd "$(dirname "$0")/.."
# The library's tests build in the workspace, as make test builds them.
export GOWORK=$PWD/go.work
only_fetch=0
if [ "${1:-}" = --fetch ]; then
	only_fetch=1
	shift
fi
majors=("$@")
[ ${#majors[@]} -gt 0 ] || majors=(130 131 138 143 148 153)
cache=${HYBROUTE_COMPAT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hybroute-compat}
mkdir -p "$cache"
tests='^(TestRateLimitedCloudFallsBackToLocal|TestLocalhostGoesToSidecarWhilePublicRunsInCloud|TestMixedCallRunsWhollyLocal|TestGuardHoldsEveryChannelOnCloud|TestGuardRefusesPopupsOnCloud|TestPrivilegedSchemesAreRefusedOnBothRoutes|TestEgressRefusesWhatURLsCannotShow|TestOldCloudBrowserFallsBackWithTheReason|TestCloudGuardSeesEveryRequest|TestOperatorRulesHoldOnBothRoutes|TestGrantPublicPagesReachNoPrivateAddress|TestBrowserBelowTheFloorIsRefused|TestSessionsStartFewRenderers|TestCloseDuringChromiumStartLeavesNothing|TestCloseLeavesNoChromium|TestLocalWebRTCSendsNoUDP)$'
# The guard's own tests that depend on the browser's major.
guard_tests='^(TestOfflineRulePatterns)$'

fetch() { # major -> path of its binary
	local m=$1 dir="$cache/$1"
	if [ ! -x "$dir/chromium" ]; then
		mkdir -p "$dir" && (
			cd "$dir" &&
			npm pack --silent "@sparticuz/chromium@$m.x" >/dev/null &&
			tar xzf sparticuz-chromium-*.tgz package/bin/chromium.br &&
			node -e 'const f=require("fs"),z=require("zlib");f.writeFileSync("chromium.tmp",z.brotliDecompressSync(f.readFileSync("package/bin/chromium.br")),{mode:0o755})' &&
			mv chromium.tmp chromium && rm -rf package sparticuz-chromium-*.tgz
		) >&2 || { echo "compat: could not fetch Chromium $m" >&2; return 1; }
	fi
	echo "$dir/chromium"
}

if [ $only_fetch = 1 ]; then
	rc=0
	for m in "${majors[@]}"; do fetch "$m" >/dev/null || rc=1; done
	exit $rc
fi

go test -c -o "$cache/hybroute.test" . || exit 1
go test -c -o "$cache/guard.test" ./internal/guard || exit 1
# Every name of the two lists must run on every browser: a test renamed
# or moved would otherwise leave the matrix without a word.
named=$(($(tr -cd '|' <<<"$tests" | wc -c) + $(tr -cd '|' <<<"$guard_tests" | wc -c) + 2))
# The rows run COMPAT_JOBS at a time (1 by default: two rows side by
# side, with the guard's tests running 8 at once, timed out the full
# browser's row in CI). Each row writes its line, and its failures,
# to files of its own, which are printed in the matrix's order at the end.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() { # index label binary
	local out ver pass skip fail rc=0
	ver=$("$3" --version 2>/dev/null | head -1)
	out=$(CHROMIUM="$3" "$cache/hybroute.test" -test.count=1 -test.timeout=10m -test.v -test.run "$tests" 2>&1) || rc=1
	out+=$'\n'$(cd internal/guard && CHROMIUM="$3" "$cache/guard.test" -test.count=1 -test.timeout=10m -test.v -test.run "$guard_tests" 2>&1) || rc=1
	pass=$(grep -c '^--- PASS' <<<"$out") skip=$(grep -c '^--- SKIP' <<<"$out") fail=$(grep -c '^--- FAIL' <<<"$out")
	if [ $rc -ne 0 ]; then
		touch "$work/$1.failed"
		grep -E '^(--- FAIL|panic)|Error:|Messages:' <<<"$out" | head -20 | sed "s/^/compat: $2: /" >"$work/$1.err"
	fi
	if [ $((pass + skip + fail)) -ne "$named" ]; then
		touch "$work/$1.failed"
		echo "compat: $2: $named tests named, $((pass + skip + fail)) ran; a name matches no test" >>"$work/$1.err"
	fi
	printf '| %-7s | %-44s | %4d | %4d | %4d |\n' "$2" "$ver" "$pass" "$skip" "$fail" >"$work/$1.row"
}
jobs=${COMPAT_JOBS:-1} n=0
start() { # label binary
	n=$((n + 1))
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	run "$n" "$1" "$2" &
}
for m in "${majors[@]}"; do
	if bin=$(fetch "$m"); then
		start "$m" "$bin"
	else
		n=$((n + 1))
		printf '| %-7s | %-44s | %4s | %4s | %4s |\n' "$m" "not fetched" - - - >"$work/$n.row"
		touch "$work/$n.failed"
	fi
done
if sys=$(command -v chromium || command -v google-chrome); then
	start system "$sys"
fi
# The distribution's headless shell, which the sidecar prefers when it is
# installed (docs/decisions/2026-12-03-a-headless-shell-first-and-no-browser-window-per-session.md).
if [ "${COMPAT_SHELL:-1}" != 0 ] && shell=$(command -v chromium-headless-shell); then
	start shell "$shell"
fi
wait
failed=0
for i in $(seq 1 "$n"); do
	[ ! -e "$work/$i.err" ] || cat "$work/$i.err" >&2
	[ ! -e "$work/$i.failed" ] || failed=1
done
echo
echo "| build   | version                                      | pass | skip | fail |"
echo "|---------|----------------------------------------------|------|------|------|"
for i in $(seq 1 "$n"); do cat "$work/$i.row"; done
exit $failed
