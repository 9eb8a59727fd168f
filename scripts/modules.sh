# The repository's Go modules, for the scripts that source this file from
# the repository's root (lint.sh, install-check.sh).
#
# Every go.mod outside testdata is a module, and go.work uses each of them.
# The modules require each other at PLACEHOLDER, a version no proxy has:
# go.work replaces it by the working tree for development and CI, a release
# sets it to the sibling's tag, and scripts/install-check.sh to the version
# it builds. No go.mod carries a replace directive, since the go command
# refuses `go install pkg@version` for a module that has one.
#
# Adding a module: its go.mod requires the siblings it imports at
# PLACEHOLDER, then
#   go work use ./dir
# and, if another module imports it,
#   go work edit -replace=<its module path>@<PLACEHOLDER>=./dir
# (check_workspace, run by make lint, says which line is missing).

PLACEHOLDER=v0.0.0-00010101000000-000000000000
GO=${GO:-go}

# repo_modules prints the directory of every go.mod of the repository
# (".", "./cmd", ...), the root first.
repo_modules() {
	find . \( -name testdata -o -name node_modules -o -name '.*' ! -name . -o -name '_*' \) -prune \
		-o -name go.mod -type f -print | sed 's|/go.mod$||' | LC_ALL=C sort
}

# work_modules prints the directories go.work uses, as repo_modules does.
work_modules() {
	$GO work edit -json go.work | jq -r '.Use[].DiskPath' |
		sed -e 's|/$||' -e 's|^\([^.]\)|./\1|' | LC_ALL=C sort
}

# module_paths prints "module-path dir" for every module of the repository.
module_paths() {
	local d
	for d in $(repo_modules); do
		echo "$($GO mod edit -json "$d/go.mod" | jq -r .Module.Path) $d"
	done
}

# check_workspace fails, saying what to change, unless go.work uses every
# module, no go.mod replaces anything, every requirement of a sibling is at
# PLACEHOLDER, and go.work replaces each required sibling by its directory.
check_workspace() {
	local rc=0 d path dir req ver
	if ! diff <(repo_modules) <(work_modules) >/dev/null; then
		echo "lint: go.work and the go.mod files of the repository disagree (< go.mod found, > go.work uses):" >&2
		diff <(repo_modules) <(work_modules) | grep '^[<>]' >&2
		echo "lint: add a module with 'go work use ./dir' (scripts/modules.sh)" >&2
		rc=1
	fi
	declare -A dirs=()
	while read -r path dir; do dirs[$path]=$dir; done < <(module_paths)
	local work
	work=$($GO work edit -json go.work)
	for d in $(repo_modules); do
		if [ "$($GO mod edit -json "$d/go.mod" | jq '.Replace // [] | length')" != 0 ]; then
			echo "lint: $d/go.mod has a replace directive: go install ...@version would refuse the module; go.work replaces for development" >&2
			rc=1
		fi
		while read -r req ver; do
			[ -n "${dirs[$req]:-}" ] || continue
			if [ "$ver" != "$PLACEHOLDER" ]; then
				echo "lint: $d/go.mod requires $req at $ver; the modules of the repository require each other at $PLACEHOLDER" >&2
				rc=1
			fi
			if [ "$(jq -r --arg p "$req" --arg v "$PLACEHOLDER" '.Replace // [] | map(select(.Old.Path == $p and .Old.Version == $v)) | .[0].New.Path // ""' <<<"$work" | sed -e 's|/$||' -e 's|^\([^.]\)|./\1|')" != "${dirs[$req]}" ]; then
				echo "lint: go.work does not replace $req@$PLACEHOLDER by ${dirs[$req]}: go work edit -replace=$req@$PLACEHOLDER=${dirs[$req]}" >&2
				rc=1
			fi
		done < <($GO mod edit -json "$d/go.mod" | jq -r '.Require // [] | .[] | "\(.Path) \(.Version)"')
	done
	return $rc
}
