// Package lock is netdisk's per-operation FIFO lock manager (seed 003): many
// nodes (mounts, pullers, containers sharing a host cache) that want the same
// one-time work done (fetch a file, update it) take a lock keyed
// "op:resource"; one of them does the work, the others wait in that op's own
// FIFO queue and are woken when it ends.
//
// The rules, all of them from the seed except the lease:
//   - TryLock on a free key acquires it; on a key the same node holds it
//     re-enters (acquired, the lease renewed; one Unlock releases it); on a
//     key another node holds it queues the caller at the tail of that key's
//     queue when multi-node mode is on, and refuses it (nothing queued) when
//     it is off. Keys of different ops never block each other.
//   - Unlock with a failure hands the lock to the head of the same key's
//     queue, which is woken (EventGranted) and claims it with TryLock.
//   - Unlock with success deletes the lock and dissolves its queue without
//     granting it: the work is done, so every waiter is woken
//     (EventReleased) to re-check the resource and asks again only if it is
//     still missing.
//   - Beyond the seed: a holder holds a lease (Manager's Lease, 15 s by
//     default) renewed by TryLock and Heartbeat. A holder whose lease runs
//     out counts as failed (the lock passes on, it is told EventLost); a
//     queue head granted the lock that does not claim it within a lease is
//     skipped the same way. A crashed node never stalls a queue.
//   - Queues are bounded per key and per user (errs.TooMany, 429).
//
// The state lives behind State: in process (Memory) for one daemon, or in
// Redis (Redis: Lua scripts and pub/sub) so daemons sharing one Redis
// coordinate the same queues. Both run the suite in lock/locktest. Time is
// the Manager's clock, passed to the state, so leases are tested with a fake
// clock.
//
// The package knows nothing of users' paths or permissions: the HTTP edge
// (api/lockroutes.go) scopes resources per user or per content and decides who
// may lock what.
package lock

import (
	"context"
	"strings"
	"time"

	"netdisk/apitype"
)

// Key is the seed's lock key: op + ":" + resource. Each key has its own
// holder and its own FIFO queue.
func Key(op, resource string) string { return apitype.LockKey(op, resource) }

// SplitKey is the inverse of Key.
func SplitKey(key string) (op, resource string) {
	op, resource, _ = strings.Cut(key, ":")
	return op, resource
}

// Node is who asks for a lock: a node (a client process) of a user. The user
// bounds the queue slots one account can take; two users' nodes with the
// same ID are different nodes.
type Node struct {
	User string // the account, e.g. its numeric ID; no "/"
	ID   string // chosen by the client, unique among its nodes
}

// String is the node's identity in the state: "user/id".
func (n Node) String() string { return n.User + "/" + n.ID }

// ParseNode is the inverse of Node.String.
func ParseNode(s string) Node {
	u, id, _ := strings.Cut(s, "/")
	return Node{User: u, ID: id}
}

// Status is where a node stands on a key.
type Status string

const (
	// Acquired: the node holds the lock and should do the work, renewing
	// its lease with Heartbeat until it unlocks.
	Acquired Status = apitype.LockAcquired
	// Granted: the lock passed to the node (it was the queue head when the
	// holder failed) but the node has not claimed it with TryLock yet.
	Granted Status = apitype.LockGranted
	// Queued: the node waits in the key's queue at Position (1 = head).
	Queued Status = apitype.LockQueued
	// Refused: held by another node and multi-node mode is off; nothing
	// was queued.
	Refused Status = apitype.LockRefused
	// None: the node neither holds nor waits for the key.
	None Status = apitype.LockNone
)

// Result is a node's standing on a key after a call.
type Result struct {
	Status    Status
	Position  int       // 1-based place in the queue when Queued
	Reentered bool      // Acquired by a node that already held it
	Deadline  time.Time // when the lease ends, when Acquired or Granted
}

// EventType says why a node is woken.
type EventType string

const (
	// EventGranted: the holder failed; the lock is the node's now, to claim
	// with TryLock within a lease.
	EventGranted EventType = apitype.LockEventGranted
	// EventReleased: the holder succeeded; the queue is dissolved. The
	// node re-checks the resource and asks again only if it is missing.
	EventReleased EventType = apitype.LockEventReleased
	// EventLost: the node's lease ran out; the lock passed on.
	EventLost EventType = apitype.LockEventLost
)

// Event wakes one node about one key.
type Event struct {
	Type EventType
	Key  string
	Node Node
}

// Limits are the rules a state applies on a call.
type Limits struct {
	Lease       time.Duration // how long a grant or a heartbeat holds
	MultiNode   bool          // queue (true) or refuse (false) a busy key
	MaxQueue    int           // waiters per key
	MaxUserWait int           // queue slots one user holds across all keys
}

// State keeps holders and queues. Every method is atomic: it first passes
// on the key's lock if its lease ended before now (as a failure), then
// applies the call. Events are delivered to the function given to Watch,
// on this daemon or (Redis) any daemon sharing the state.
//
// Errors: errs.TooMany when a queue bound is reached, errs.Conflict from
// Heartbeat and Unlock of a node that does not hold the lock, errs.Unavailable
// when the store is unreachable.
type State interface {
	// TryLock acquires, re-enters, queues or refuses (see the package doc).
	// A queued node asking again keeps its place; a granted node claims.
	TryLock(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error)
	// Heartbeat renews the holder's lease (claiming a grant too).
	Heartbeat(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error)
	// Unlock ends the holder's work: failed hands the lock to the queue
	// head, success deletes it and wakes every waiter. A waiter calling
	// Unlock leaves the queue. A node with no standing gets errs.Conflict.
	Unlock(ctx context.Context, key string, n Node, failed bool, lim Limits, now time.Time) error
	// Inspect tells the node's standing without changing it (beyond
	// passing on an expired lease).
	Inspect(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error)
	// Expire passes on every lock whose lease ended before now.
	Expire(ctx context.Context, lim Limits, now time.Time) error
	// Watch delivers every event to deliver from its return until stop is
	// called. deliver must not block.
	Watch(ctx context.Context, deliver func(Event)) (stop func(), err error)
}
