package apitype

import "time"

// The bodies of the lock endpoints (/api/v1/lock/…, docs/API.md, the lock
// service of seed 003, package lock).

// LockRequest is the body of POST /api/v1/lock/try, /heartbeat and /unlock.
type LockRequest struct {
	Op       string `json:"op"`       // e.g. "pull", "update", "delete": [a-z]{1,32}
	Resource string `json:"resource"` // "content:<file hash>" or "path:/a/b" (the caller's own path)
	Node     string `json:"node"`     // the caller's node ID: [A-Za-z0-9._:-]{1,128}
	// Path is, on try of a content resource, a file of the caller holding
	// that content: only content the caller can read can be locked.
	Path string `json:"path,omitempty"`
	// Outcome is, on unlock, "success" (the work is done: the lock is
	// deleted and every waiter re-checks) or "failure" (the lock passes to
	// the queue head).
	Outcome string `json:"outcome,omitempty"`
}

// LockAnswer is the answer of try, heartbeat and state, and the data of
// every event of GET /api/v1/lock/events.
type LockAnswer struct {
	Op       string `json:"op"`
	Resource string `json:"resource"`
	// Event is set on events: "state" (the standing when the stream
	// opens), "granted", "released" or "lost".
	Event     string     `json:"event,omitempty"`
	Status    string     `json:"status"` // acquired, granted, queued, refused, none (lock.Status)
	Position  int        `json:"position,omitempty"`
	Reentered bool       `json:"reentered,omitempty"`
	Deadline  *time.Time `json:"deadline,omitempty"` // lease end, when acquired or granted
	LeaseMs   int64      `json:"leaseMs"`            // the lease to heart-beat within
}

// The values of LockAnswer.Status: where the node stands on the key.
const (
	LockAcquired = "acquired" // holds the lock: do the work, heart-beat the lease
	LockGranted  = "granted"  // the lock passed to the node: claim it with try within a lease
	LockQueued   = "queued"   // waits in the key's queue at Position (1 = head)
	LockRefused  = "refused"  // held by another node and multi-node mode is off
	LockNone     = "none"     // neither holds nor waits for the key
)

// The values of LockAnswer.Event on GET /api/v1/lock/events.
const (
	LockEventState    = "state"    // the standing, when the stream opens or it changed unseen
	LockEventGranted  = "granted"  // the holder failed: the lock is the node's, to claim
	LockEventReleased = "released" // the holder succeeded: re-check the resource
	LockEventLost     = "lost"     // the node's lease ran out: the lock passed on
)

// LockOpPull is the op of pull locks: a fetch of content that several nodes
// want (seed 003).
const LockOpPull = "pull"

// LockKey is a lock's key, op + ":" + resource, as the events stream's keys
// parameter names it.
func LockKey(op, resource string) string { return op + ":" + resource }
