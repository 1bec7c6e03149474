package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"netdisk/apitype"
	"netdisk/internal/tick"
)

// The lock endpoints (docs/API.md, "Locks"): TryLock, Heartbeat, Unlock and
// LockState take and report op:resource locks of seed 003; LockEvents is the
// Server-Sent Events stream that wakes a waiting node.

// ContentResource names the shared bytes of a file hash as a lock resource.
func ContentResource(fileHash string) string { return "content:" + fileHash }

// PathResource names one of the user's own paths as a lock resource.
func PathResource(p string) string { return "path:" + p }

// TryLock asks for a lock. For a content resource, path must be a file of
// the user holding that content.
func (c *Client) TryLock(ctx context.Context, op, resource, node, path string) (apitype.LockAnswer, error) {
	var a apitype.LockAnswer
	err := c.JSON(ctx, http.MethodPost, "/api/v1/lock/try", nil,
		apitype.LockRequest{Op: op, Resource: resource, Node: node, Path: path}, &a)
	return a, err
}

// Heartbeat renews the node's lease; a 409 means the lock was lost.
func (c *Client) Heartbeat(ctx context.Context, op, resource, node string) (apitype.LockAnswer, error) {
	var a apitype.LockAnswer
	err := c.JSON(ctx, http.MethodPost, "/api/v1/lock/heartbeat", nil,
		apitype.LockRequest{Op: op, Resource: resource, Node: node}, &a)
	return a, err
}

// Unlock ends the node's work (success: the lock is deleted and every waiter
// re-checks; failure: the next waiter gets it), or leaves the queue.
func (c *Client) Unlock(ctx context.Context, op, resource, node string, success bool) error {
	outcome := "failure"
	if success {
		outcome = "success"
	}
	return c.JSON(ctx, http.MethodPost, "/api/v1/lock/unlock", nil,
		apitype.LockRequest{Op: op, Resource: resource, Node: node, Outcome: outcome}, nil)
}

// LockState reports the node's standing on a key.
func (c *Client) LockState(ctx context.Context, op, resource, node string) (apitype.LockAnswer, error) {
	var a apitype.LockAnswer
	err := c.JSON(ctx, http.MethodGet, "/api/v1/lock/state",
		url.Values{"op": {op}, "resource": {resource}, "node": {node}}, nil, &a)
	return a, err
}

// EventStream is an open GET /api/v1/lock/events.
type EventStream struct {
	sseReader
	waited bool // WaitWhileQueued has read the opening states
}

// LockEvents opens the node's event stream. Its first events are one
// "state" per key (op:resource) given: the node's standing now, which is
// how a reconnecting node learns what happened while it was away.
func (c *Client) LockEvents(ctx context.Context, node string, keys ...string) (*EventStream, error) {
	sr, err := c.openSSE(ctx, "/api/v1/lock/events", url.Values{"node": {node}, "key": keys}, "lock events")
	if err != nil {
		return nil, err
	}
	return &EventStream{sseReader: sr}, nil
}

// Next returns the next event; an error (io.EOF included) means the stream
// ended and the caller reconnects.
func (s *EventStream) Next() (apitype.LockAnswer, error) {
	name, data, err := s.next()
	if err != nil {
		return apitype.LockAnswer{}, err
	}
	var a apitype.LockAnswer
	if err := json.Unmarshal([]byte(data), &a); err != nil {
		return apitype.LockAnswer{}, fmt.Errorf("lock event %q: %w", name, err)
	}
	if a.Event == "" {
		a.Event = name
	}
	return a, nil
}

// WaitWhileQueued reads events until the node's standing changes from
// queued (a grant, a release, a loss, or a "state" other than queued),
// passing each to onEvent (may be nil). granted reports that the lock passed
// to the node: it must claim it (TryLock) before anything else, even when it
// finds the work done, or the queue behind it stalls for a lease. An error
// means the stream ended: reconnect and ask again.
//
// The caller opened the stream before its TryLock answered queued (so no
// wake-up between the two is missed): the stream's opening "state" events
// tell the standing before that try ("none" on a first try) and are
// skipped; a grant or a release between the two arrives as its own event.
func (s *EventStream) WaitWhileQueued(onEvent func(apitype.LockAnswer)) (granted bool, err error) {
	opening := !s.waited
	s.waited = true
	for {
		ev, err := s.Next()
		if err != nil {
			return false, err
		}
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Event == apitype.LockEventState && (opening || ev.Status == apitype.LockQueued) {
			opening = false // one opening state per key: the callers wait on one
			continue
		}
		opening = false
		return ev.Event == apitype.LockEventGranted || ev.Status == apitype.LockGranted, nil
	}
}

// KeepLock heart-beats a held lock every third of lease until stop is
// called; lost is closed if the server says the lock is no longer the
// node's (its lease ran out before a heartbeat got through).
func (c *Client) KeepLock(op, resource, node string, lease time.Duration) (lost <-chan struct{}, stop func()) {
	every := lease / 3
	if every <= 0 {
		every = time.Second
	}
	l := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick.Every(ctx, every, func(ctx context.Context) {
			if _, err := c.Heartbeat(ctx, op, resource, node); StatusOf(err) == http.StatusConflict {
				close(l)
				cancel() // the lock is gone: no more heartbeats
			}
		})
	}()
	return l, func() { cancel(); <-done }
}
