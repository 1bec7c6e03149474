#!/bin/sh
# refactor.sh moves the daemon's composition root out of server/ into its own
# package, daemon/: server/ keeps the HTTP surface (routes, auth, throttling,
# proxies, connection limits, cross-site refusal, /metrics, web sessions);
# daemon/ opens the stores and wires the layers, owns the background loops,
# the run-once leases and the listeners beside the public one.
#
# Mechanical and re-runnable: every step is skipped once done, so it can run
# again on a tree where others changed the moved files' lines (run it from
# anywhere in the worktree: sh refactor.sh). It expects server.Listen (the
# public listener's serving, in server/listen.go) to exist already.
set -eu
cd "$(git rev-parse --show-toplevel)"

# 1. The files: the wiring and the tests that open a daemon in process.
mkdir -p daemon
for f in daemon.go lease.go scaleout.go metricslisten.go \
	close_test.go lifetime_test.go deleteuser_test.go; do
	if [ -e "server/$f" ] && [ ! -e "daemon/$f" ]; then
		git mv "server/$f" "daemon/$f"
	fi
done
for f in daemon/*.go; do
	sed -i 's/^package server$/package daemon/' "$f"
done

# add_import FILE PATH: adds PATH to FILE's import block (its last group, the
# module's; gofmt sorts it into place) unless FILE imports it already.
add_import() {
	grep -q "^	\"$2\"$" "$1" && return 0
	awk -v p="$2" '
		/^import \($/ { inblock = 1 }
		inblock && /^\)$/ { printf "\t\"%s\"\n", p; inblock = 0 }
		{ print }' "$1" >"$1.tmp"
	mv "$1.tmp" "$1"
}

# uses FILE NAME: whether FILE's code (its comment lines apart) names
# NAME.Exported.
uses() {
	grep -v '^[[:space:]]*//' "$1" | grep -q "\b$2\.[A-Z]"
}

# drop_import FILE PATH NAME: removes PATH from FILE's imports once no
# NAME.Exported is left in its code.
drop_import() {
	uses "$1" "$3" && return 0
	sed -i "/^	\"$(printf %s "$2" | sed 's|/|\\/|g')\"$/d" "$1"
}

# 2. Inside daemon/: the server's names are the server package's now.
sed -i \
	-e 's/^\tServer \*Server$/\tServer *server.Server/' \
	-e 's/\bConns ConnLimits$/Conns server.ConnLimits/' \
	-e 's/connections (connlimit\.go); zero$/connections (server\/connlimit.go); zero/' \
	-e 's/^\t\/\/ fields take DefaultConnLimits\.$/\t\/\/ fields take server.DefaultConnLimits./' \
	-e 's/(Config\.TrustedProxies)/(server.Config.TrustedProxies)/' \
	-e 's/\bsc := Config{/sc := server.Config{/' \
	-e 's/\bsrv := New(sc)/srv := server.New(sc)/' \
	daemon/daemon.go
add_import daemon/daemon.go netdisk/server
# The goroutine check of a closed daemon covers the daemon package's own.
sed -i 's|^var daemonPackages = \[\]string{"netdisk/server\.", |var daemonPackages = []string{"netdisk/daemon.", "netdisk/server.", |' \
	daemon/close_test.go

# 3. Callers, comments and docs: server.Open and its types are daemon's.
files=$(git grep -lE '\bserver\.(Open|Options|Daemon|DefaultLeaseTTL)\b|server/(daemon|lease|scaleout)\.go' \
	-- '*.go' '*.md' ':!daemon/' ':!refactor.sh' || true)
for f in $files; do
	sed -i -E \
		-e 's/\bserver\.(Open|Options|Daemon|DefaultLeaseTTL)\b/daemon.\1/g' \
		-e 's#\bserver/(daemon|lease|scaleout)\.go#daemon/\1.go#g' \
		"$f"
	case "$f" in
	*.go)
		if uses "$f" daemon; then
			add_import "$f" netdisk/daemon
		fi
		drop_import "$f" netdisk/server server
		;;
	esac
done

gofmt -w daemon $(printf '%s\n' $files | grep '\.go$' || true)
