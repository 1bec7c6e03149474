#!/usr/bin/env bash
# refactor.sh: the mechanical part of "the metadata contract hides its
# engine". Run it from anywhere in the tree (it works on the module it lives
# in); a second run changes nothing, so it can be run again on a tree that
# merged new code written the old way.
#
#  1. Callers outside package meta name meta's transaction, *meta.Tx, where
#     they named *sql.Tx, and drop the database/sql import they no longer
#     use; drive reaches the transactional tree changes through its
#     meta.Store (d.tree() becomes d.meta).
#  2. The store type meta.SQLite, which also serves PostgreSQL, is
#     meta.SQLStore: in code (gofmt -r) and in comments and docs (sed).
#
# It needs gofmt (the Go toolchain) and GNU sed; it builds nothing: run
# `go build ./... && go vet ./...` after it.
set -euo pipefail

root=$(cd "$(dirname "$0")" && git rev-parse --show-toplevel)
cd "$root"

gofiles() { git ls-files -co --exclude-standard -- '*.go'; }
# grepl lists the files of stdin that match (none is not a failure).
grepl() { xargs -r grep -l "$@" || [[ $? == 123 ]]; }
pkgof() { sed -n 's/^package \([A-Za-z0-9_]*\).*/\1/p' "$1" | head -1; }

# 1. *sql.Tx -> *meta.Tx outside package meta.
gofiles | grepl 'sql\.Tx\b' | while read -r f; do
	[[ $(pkgof "$f") == meta ]] && continue
	sed -i 's/\*sql\.Tx\b/*meta.Tx/g' "$f"
	if ! grep -q '"netdisk/meta"' "$f"; then
		echo "refactor.sh: $f now names meta.Tx but does not import netdisk/meta: add the import" >&2
		exit 1
	fi
	# The import goes when no code line uses the package any more.
	if ! grep -v '^[[:space:]]*//' "$f" | grep -q '\bsql\.'; then
		sed -i '/^[[:space:]]*"database\/sql"$/d' "$f"
	fi
done
git ls-files -co --exclude-standard -- 'drive/*.go' | xargs -r sed -i 's/\.tree()\./.meta./g'

# 2. meta.SQLite -> meta.SQLStore. Inside package meta every identifier
# SQLite is the type (or Postgres's embedded field of that type); elsewhere
# only a selector .SQLite is (meta.SQLite, or p.SQLite on a *meta.Postgres).
gofiles | grepl -w 'SQLite' | while read -r f; do
	if [[ $(pkgof "$f") == meta ]]; then
		gofmt -r 'SQLite -> SQLStore' -w "$f"
		# Comments naming the type: (*SQLite).Tx, SQLite.GroupTx, a *SQLite.
		sed -i -e 's/\*SQLite\b/*SQLStore/g' -e 's/\bSQLite\.\([A-Za-z]\)/SQLStore.\1/g' "$f"
	else
		gofmt -r 'x.SQLite -> x.SQLStore' -w "$f"
	fi
done
{ gofiles; git ls-files -co --exclude-standard -- '*.md'; } | grepl 'meta\.SQLite\b' |
	xargs -r sed -i 's/\bmeta\.SQLite\b/meta.SQLStore/g'

gofmt -l $(gofiles) | sed 's/^/refactor.sh: not gofmt-clean: /' >&2 || true
