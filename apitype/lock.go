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
