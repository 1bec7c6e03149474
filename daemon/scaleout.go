package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"

	"netdisk/dedup"
)

// Scale-out wiring: several `netdisk serve` nodes share one PostgreSQL
// metadata store (Options.Meta), one S3 bucket of chunks (Options.Blobs) and
// one Redis (Options.Redis).

// errSharedNeedsRedis explains the refusal in the operator's terms.
var errSharedNeedsRedis = errors.New("--meta names a shared metadata store, which several nodes use at once: " +
	"--redis is required so that they also share the quota ledger and the lock service " +
	"(without it each node would account quota and grant locks on its own, and two nodes could overrun a quota or both hold one lock)")

// checkShared refuses a configuration in which nodes would share metadata
// but keep per-process state that must be shared with it.
func checkShared(o Options) error {
	if o.Meta != "" && o.Redis == "" {
		return errSharedNeedsRedis
	}
	return nil
}

// openBlobs opens the shared chunk store Options.Blobs names, or returns nil
// for the local chunk directory.
func openBlobs(ctx context.Context, o Options) (dedup.BlobStore, error) {
	if o.Blobs == "" {
		return nil, nil
	}
	return dedup.OpenURL(ctx, o.Blobs, dedup.CacheConfig{Dir: o.CacheDir, Size: o.CacheSize})
}

// nodeName names this process among the nodes: the host for the operator
// reading Redis, a random suffix so two processes on one host differ.
func nodeName() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// The read cache's pull locks (seed 003): a miss on a chunk takes
// "pull:cache:<sha-256>" as this node. The "cache:" scope is not one the
// lock API lets clients name (they have "content:", "chunk:" and "path:"),
// so no client can hold up a node's reads; cachePullUser, not a user ID,
// gives the nodes' waits their own per-user queue bound.
const (
	cachePullScope = "cache:"
	cachePullUser  = "nodes"
)
