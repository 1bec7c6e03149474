package dedup

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/internal/redishealth"
)

// Pinner keeps chunks alive between an upload storing a blob and its commit
// referencing it (and while a reader has one open); GC deletes a chunk only
// through IfUnpinned. Pins is the in-process Pinner; SharedPins extends it
// to every node sharing a blob store.
type Pinner interface {
	// Pin adds a reference to k, waiting for a GC deletion of k in progress
	// until ctx ends (the reference is taken either way: the caller's work
	// then fails with its ctx, and Unpin drops it).
	Pin(ctx context.Context, k Key)
	// Unpin drops a reference taken by Pin. It completes even when ctx is
	// cancelled (a request that ends must still drop its pins); ctx gives
	// only its values.
	Unpin(ctx context.Context, k Key)
	// IfUnpinned runs fn, unless k is pinned, so that no Pin of k completes
	// while fn runs; it reports whether fn ran.
	IfUnpinned(ctx context.Context, k Key, fn func() error) (bool, error)
}

var (
	_ Pinner = (*Pins)(nil)
	_ Pinner = (*SharedPins)(nil)
)

// SharedPins are pins every node sees, for nodes sharing one blob store:
// a chunk node A has stored and not yet committed is safe from node B's GC.
//
// Each key pinned on a node is a field (the node's name) of a Redis hash
// netdisk:pin:<sha256>, whose value is the pin's lease expiry. GC's
// IfUnpinned atomically (one Lua script) finds no live field and sets
// netdisk:gcdel:<sha256>; Pin atomically refuses while that marker exists
// and waits for it to go, so a pin is either registered before GC looks
// (GC skips the chunk) or after GC has finished deleting it (the uploader's
// check after Pin finds the blob gone and stores it again) — the same
// ordering the in-process stripes give.
//
// A node that dies leaves its pins until their lease ends (the chunks then
// merely wait for a later GC). When Redis does not answer, GC deletes
// nothing (IfUnpinned reports a pin), and Pin keeps only its local pin; Redis
// losing its data (a restart without persistence) forgets pins too, so
// point --redis at a Redis with persistence or run GC rarely (docs/deploy.md).
type SharedPins struct {
	local *Pins
	rdb   *redis.Client
	node  string
	lease time.Duration
	log   *slog.Logger

	mu   sync.Mutex
	refs map[Key]int // this node's pins per key
}

// SharedPinLease is how long a pin outlives a node that died holding it.
const SharedPinLease = 24 * time.Hour

// gcMarkerTTL bounds how long a GC deletion blocks pins of its chunk if
// the GC node dies mid-deletion; a deletion itself takes milliseconds.
const gcMarkerTTL = 30 * time.Second

// NewSharedPins returns the pins of node (a name unique among the nodes,
// e.g. host:port plus a random suffix) in rdb.
func NewSharedPins(rdb *redis.Client, node string, log *slog.Logger) *SharedPins {
	if log == nil {
		log = slog.Default()
	}
	return &SharedPins{local: NewPins(), rdb: rdb, node: node, lease: SharedPinLease, log: log, refs: map[Key]int{}}
}

func pinKey(k Key) string   { return "netdisk:pin:" + string(k) }
func gcDelKey(k Key) string { return "netdisk:gcdel:" + string(k) }

// pinScript registers node's pin unless a GC deletion of the key is under
// way (returns 0: wait and try again).
var pinScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1`)

// gcScript claims the key for deletion unless some node holds a live pin
// (returns 1 when claimed).
var gcScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local pins = redis.call('HGETALL', KEYS[1])
for i = 2, #pins, 2 do
  if tonumber(pins[i]) > now then return 0 end
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1`)

// Pin takes a local pin and, on this node's first for k, registers it in
// Redis, waiting while another node's GC is deleting k.
func (p *SharedPins) Pin(ctx context.Context, k Key) {
	p.local.Pin(ctx, k)
	p.mu.Lock()
	p.refs[k]++
	first := p.refs[k] == 1
	p.mu.Unlock()
	if !first {
		return
	}
	deadline := time.Now().Add(gcMarkerTTL + 5*time.Second)
	for {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := pinScript.Run(rctx, p.rdb, []string{pinKey(k), gcDelKey(k)}, p.node, p.lease.Milliseconds()).Int()
		cancel()
		if ctx.Err() != nil {
			return // the caller gave up: its work ends with ctx
		}
		if err != nil {
			p.log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "shared pins: Redis unavailable; pin kept on this node only", "chunk", k, "err", err)
			return
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			p.log.Warn("shared pins: a GC deletion marker outlived its TTL", "chunk", k)
			return
		}
		// Another node's GC is deleting k right now: milliseconds.
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// Unpin drops a local pin and, with this node's last for k, its Redis field.
func (p *SharedPins) Unpin(ctx context.Context, k Key) {
	p.mu.Lock()
	p.refs[k]--
	last := p.refs[k] <= 0
	if last {
		delete(p.refs, k)
	}
	p.mu.Unlock()
	if last {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		if err := p.rdb.HDel(rctx, pinKey(k), p.node).Err(); err != nil {
			p.log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "shared pins: cannot drop a pin; it lapses with its lease", "chunk", k, "err", err)
		}
		cancel()
	}
	p.local.Unpin(ctx, k)
}

// IfUnpinned runs fn when no node pins k, holding k's local stripe and its
// Redis deletion marker meanwhile.
func (p *SharedPins) IfUnpinned(ctx context.Context, k Key, fn func() error) (bool, error) {
	var claimed bool
	ran, err := p.local.IfUnpinned(ctx, k, func() error {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		n, err := gcScript.Run(rctx, p.rdb, []string{pinKey(k), gcDelKey(k)}, p.node, gcMarkerTTL.Milliseconds()).Int()
		cancel()
		if err != nil {
			return fmt.Errorf("shared pins: %w", err)
		}
		if n != 1 {
			return nil
		}
		claimed = true
		defer func() {
			// The marker goes even when ctx ended: it holds other nodes' pins.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			p.rdb.Del(rctx, gcDelKey(k))
			cancel()
		}()
		return fn()
	})
	return ran && claimed, err
}
