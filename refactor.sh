#!/usr/bin/env bash
# refactor.sh moves the test rigs out of internal/ and makes tests use the
# rig's one fake clock, RandBytes and MD5Hex. It is mechanical and re-runnable:
# run it at the module root on any tree (a step already done is a no-op), then
# build and vet. Hand edits live in their own commits.
#
#   internal/testutil -> testutil          (package testutil: the leaf rig)
#   internal/deptest  -> testutil/deptest  (package deptest: dependency and layer tests)
#   internal/testenv  -> drive/drivetest   (package drivetest: the in-process drive, beside drive)
#
# Needs git, perl and goimports (~/go/bin/goimports or on PATH).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
GOIMPORTS=${GOIMPORTS:-$(command -v goimports || echo ~/go/bin/goimports)}

changed=() # Go files this run rewrites, for goimports

# mv SRC DST: git mv a package folder's files (SRC may be gone already).
mv_pkg() {
	local src=$1 dst=$2
	[ -d "$src" ] || return 0
	mkdir -p "$dst"
	for f in "$src"/*; do
		git mv "$f" "$dst/"
	done
	rmdir "$src" 2>/dev/null || true
}
mv_pkg internal/testutil testutil
mv_pkg internal/deptest testutil/deptest
mv_pkg internal/testenv drive/drivetest
if [ -f drive/drivetest/testenv.go ]; then git mv drive/drivetest/testenv.go drive/drivetest/drivetest.go; fi

# The rig finds the module root from its own file: one folder up now.
perl -pi -e 's/filepath\.Join\(filepath\.Dir\(file\), "\.\.", "\.\."\)/filepath.Join(filepath.Dir(file), "..")/' testutil/testutil.go

# sub PERL FILES...: apply a perl substitution, remember the Go files it changed.
sub() {
	local expr=$1
	shift
	local f
	for f in "$@"; do
		[ -f "$f" ] || continue
		cp "$f" "$f.refactor~"
		perl -0pi -e "$expr" "$f"
		cmp -s "$f" "$f.refactor~" || case $f in *.go) changed+=("$f") ;; esac
		rm "$f.refactor~"
	done
}

mapfile -t gofiles < <(git ls-files -co --exclude-standard '*.go')
mapfile -t docfiles < <(git ls-files -co --exclude-standard '*.md' .ci/run)

# Import paths and the folders named in comments and docs.
paths='s{internal/testenv\b}{drive/drivetest}g; s{internal/deptest\b}{testutil/deptest}g; s{\binternal/testutil\b}{testutil}g'
sub "$paths" "${gofiles[@]}" "${docfiles[@]}"
# The package's new name, where files say it.
sub 's{\btestenv\b}{drivetest}g' "${gofiles[@]}"

# The one randBytes and md5hex: testutil.RandBytes, testutil.MD5Hex.
mapfile -t tests < <(git ls-files -co --exclude-standard '*_test.go' | grep -v '^testutil/')
sub 's{\n(// randBytes [^\n]*\n)?func randBytes\([^)]*\) \[\]byte \{[^\n]*\}\n}{}g; s{\n(// randBytes [^\n]*\n)?func randBytes\([^)]*\) \[\]byte \{\n.*?\n\}\n}{}sg; s{\nfunc md5hex\(b \[\]byte\) string \{[^\n]*\}\n}{}g' "${tests[@]}"
mapfile -t e2e < <(git ls-files -co --exclude-standard 'e2e/*_test.go')
sub 's{\brandBytes\([\w.]+, }{testutil.RandBytes(}g' "${e2e[@]}"
sub 's{(?<![.\w])randBytes\(}{testutil.RandBytes(}g; s{(?<![.\w])md5hex\(}{testutil.MD5Hex(}g' "${tests[@]}"

# The one fake clock in the conformance suite of meta.
mapfile -t metatest < <(git ls-files -co --exclude-standard 'meta/metatest/*.go')
sub 's{// clock is the suite.s injected time\.\ntype clock struct \{\n.*?\n\}\n\nfunc \(c \*clock\) Now\(\)[^\n]*\n\nfunc \(c \*clock\) Advance\([^\n]*\n\n}{}s; s{\*clock\b}{*testutil.Clock}g; s{&clock\{t: (\w+)\}}{testutil.NewClock($1)}g' "${metatest[@]}"

# And in the mount's write-back tests.
sub 's{// clock is a settable clock for the mount.s TTLs\.\ntype clock struct \{\n.*?\n\}\n\nfunc \(c \*clock\) Now\(\)[^\n]*\nfunc \(c \*clock\) Add\([^\n]*\nfunc newClock\(\)[^\n]*\n}{}s && (s{\*clock\b}{*testutil.Clock}g, s{\bnewClock\(\)}{testutil.NewClock(time.Now())}g, s{\bclk\.Add\(}{clk.Advance(}g)' mount/writeback_test.go

# A file that now names testutil imports it: beside its other netdisk
# imports, or as a group of its own (goimports sorts the groups).
if [ ${#changed[@]} -gt 0 ]; then
	for f in $(printf '%s\n' "${changed[@]}" | sort -u); do
		grep -q '\btestutil\.' "$f" || continue
		grep -q '"netdisk/testutil"' "$f" && continue
		[ "$(sed -n 's/^package \([a-z_]*\).*/\1/p' "$f" | head -1)" = testutil ] && continue
		perl -0pi -e 's{^(import \((?:\n(?!\t"netdisk/)[^\n]*)*?)\n(\t"netdisk/)}{$1\n\t"netdisk/testutil"\n$2}m or s{^(import \(.*?)\n\)}{$1\n\n\t"netdisk/testutil"\n)}ms' "$f"
	done
	printf '%s\n' "${changed[@]}" | sort -u | xargs "$GOIMPORTS" -local netdisk -w
fi

# What must be gone: a copy left means this script missed a form.
left=$(grep -rnE --include='*.go' 'func (randBytes|md5hex)\(|^type clock struct|"netdisk/internal/(testutil|testenv|deptest)"' . || true)
if [ -n "$left" ]; then
	echo "refactor.sh: left behind:" >&2
	echo "$left" >&2
	exit 1
fi
echo "refactor.sh: ${#changed[@]} Go files rewritten"
