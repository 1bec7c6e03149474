package api

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/lock"
	"netdisk/meta"
	"netdisk/vpath"
)

// The lock endpoints (seed 003, docs/API.md "Locks"): nodes of one user, or
// of users holding the same content, take "op:resource" locks so that one of
// them does a piece of work and the others wait in FIFO order, woken over
// Server-Sent Events.
//
// Scoping, so that a user never learns of or blocks another user's locks
// beyond content they can already read: a "path:" resource is the user's own
// (its key carries the user ID); a "content:" resource is shared by every
// user holding that content, and try needs a file of the caller holding it.
// Every other call only reports or changes the caller's own node's standing.

var (
	lockOpRe   = regexp.MustCompile(`^[a-z]{1,32}$`)
	lockNodeRe = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
	fileHashRe = regexp.MustCompile(`^[0-9a-f]{32}$`)
	sha256Re   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// DefaultLockStreamRecheck is how often an event stream re-reads the
// standing of its keys (and otherwise sends a keep-alive comment, so proxies
// and clients tell a quiet stream from a dead one).
const DefaultLockStreamRecheck = 15 * time.Second

// maxStreamKeys bounds the keys one event stream reports the state of.
const maxStreamKeys = 64

func (a *API) lockRoutes() []Route {
	running := func() bool { return a.Locks != nil }
	return a.serviceRoutes(running, "api.lock", "locks are not enabled on this server", []Route{
		{Pattern: "POST /api/v1/lock/try", Handler: a.lockTry},
		{Pattern: "POST /api/v1/lock/heartbeat", Handler: a.lockHeartbeat},
		{Pattern: "POST /api/v1/lock/unlock", Handler: a.lockUnlock},
		{Pattern: "GET /api/v1/lock/state", Handler: a.lockState},
		{Pattern: "GET /api/v1/lock/events", Handler: a.lockEvents},
	})
}

// lockTarget is a request's key and node in the manager's terms.
type lockTarget struct {
	op, resource string // the manager's resource: "content:H" or "user:UID:/p"
	wire         string // the caller's resource: "content:H" or "path:/p"
	node         lock.Node
}

func userNode(u meta.User, id string) (lock.Node, error) {
	if !lockNodeRe.MatchString(id) {
		return lock.Node{}, errs.Errorf("api.lock", errs.Invalid, "node: want 1–128 of A-Z a-z 0-9 . _ : -")
	}
	return lock.Node{User: strconv.FormatInt(u.ID, 10), ID: id}, nil
}

func parseLockTarget(u meta.User, op, resource, node string) (lockTarget, error) {
	if !lockOpRe.MatchString(op) {
		return lockTarget{}, errs.Errorf("api.lock", errs.Invalid, "op: want 1–32 lowercase letters")
	}
	n, err := userNode(u, node)
	if err != nil {
		return lockTarget{}, err
	}
	t := lockTarget{op: op, node: n}
	scope, rest, _ := strings.Cut(resource, ":")
	switch scope {
	case "content":
		if !fileHashRe.MatchString(rest) {
			return lockTarget{}, errs.Errorf("api.lock", errs.Invalid, "resource: content:<32 lowercase hex digits>")
		}
		t.resource, t.wire = resource, resource
	case "chunk":
		if !sha256Re.MatchString(rest) {
			return lockTarget{}, errs.Errorf("api.lock", errs.Invalid, "resource: chunk:<64 lowercase hex digits of SHA-256>")
		}
		t.resource, t.wire = resource, resource
	case "path":
		p, err := vpath.Clean(rest)
		if err != nil || !strings.HasPrefix(rest, "/") {
			return lockTarget{}, errs.Errorf("api.lock", errs.Invalid, "resource: path:/absolute/path")
		}
		t.resource, t.wire = "user:"+n.User+":"+p, "path:"+p
	default:
		return lockTarget{}, errs.Errorf("api.lock", errs.Invalid, `resource: "content:<file hash>", "chunk:<sha-256>" or "path:/p"`)
	}
	return t, nil
}

// wireResource is the caller's name of a manager resource.
func wireResource(resource string) string {
	if rest, ok := strings.CutPrefix(resource, "user:"); ok {
		if _, p, ok := strings.Cut(rest, ":"); ok {
			return "path:" + p
		}
	}
	return resource
}

func (a *API) lockAnswer(t lockTarget, r lock.Result) apitype.LockAnswer {
	w := apitype.LockAnswer{Op: t.op, Resource: t.wire, Status: string(r.Status), Position: r.Position,
		Reentered: r.Reentered, LeaseMs: a.Locks.Lease().Milliseconds()}
	if !r.Deadline.IsZero() {
		d := r.Deadline.UTC()
		w.Deadline = &d
	}
	return w
}

// writeLockAnswer answers with the node's standing res in t, or with err.
func (a *API) writeLockAnswer(w http.ResponseWriter, r *http.Request, t lockTarget, res lock.Result, err error) {
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, a.lockAnswer(t, res))
}

// lockRequest decodes a body and its target; false when it answered.
func (a *API) lockRequest(w http.ResponseWriter, r *http.Request, u meta.User) (apitype.LockRequest, lockTarget, bool) {
	var req apitype.LockRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return req, lockTarget{}, false
	}
	t, err := parseLockTarget(u, req.Op, req.Resource, req.Node)
	if err != nil {
		a.WriteError(w, r, err)
		return req, lockTarget{}, false
	}
	a.ownerKey(r, u, &t)
	return req, t, true
}

// ownerKey keys a "path:" target on the tree the path lies in: a path in a
// share of another user's is the owner's resource, so the owner and every
// recipient contend for one lock. The caller keeps its own name of it
// (wire). A path the drive cannot resolve (a share gone meanwhile) stays
// the caller's own.
func (a *API) ownerKey(r *http.Request, u meta.User, t *lockTarget) {
	p, ok := strings.CutPrefix(t.wire, "path:")
	if !ok {
		return
	}
	owner, op, err := a.D.Resource(r.Context(), u.ID, p)
	if err != nil {
		return
	}
	t.resource = "user:" + strconv.FormatInt(owner, 10) + ":" + op
}

func (a *API) lockTry(w http.ResponseWriter, r *http.Request, u meta.User) {
	req, t, ok := a.lockRequest(w, r, u)
	if !ok {
		return
	}
	if !strings.HasPrefix(t.wire, "path:") {
		if err := a.canRead(r, u, t.wire, req.Path); err != nil {
			a.WriteError(w, r, err)
			return
		}
	}
	res, err := a.Locks.TryLock(r.Context(), t.op, t.resource, t.node)
	a.writeLockAnswer(w, r, t, res, err)
}

// canRead checks that the caller's file at p holds the shared resource
// (content:<file hash> or chunk:<sha-256>): only content the caller can read
// can be locked. A missing path and one with other content get the same
// answer, so nothing is learnt about either.
func (a *API) canRead(r *http.Request, u meta.User, resource, p string) error {
	notHeld := errs.Errorf("api.lock", errs.NotFound, "path: no file of yours at this path holds this content")
	n, err := a.D.Stat(r.Context(), u.ID, p)
	switch {
	case errs.Is(err, errs.NotFound), errs.Is(err, errs.Invalid), errs.Is(err, errs.NotDir):
		return notHeld
	case err != nil:
		return err
	case n.IsDir:
		return notHeld
	}
	if hash, ok := strings.CutPrefix(resource, "content:"); ok {
		if n.FileHash != hash {
			return notHeld
		}
		return nil
	}
	sha, _ := strings.CutPrefix(resource, "chunk:")
	chunks, err := a.D.FileChunks(r.Context(), n)
	if err != nil {
		return err
	}
	for _, c := range chunks {
		if c.SHA256 == sha {
			return nil
		}
	}
	return notHeld
}

func (a *API) lockHeartbeat(w http.ResponseWriter, r *http.Request, u meta.User) {
	_, t, ok := a.lockRequest(w, r, u)
	if !ok {
		return
	}
	res, err := a.Locks.Heartbeat(r.Context(), t.op, t.resource, t.node)
	a.writeLockAnswer(w, r, t, res, err)
}

func (a *API) lockUnlock(w http.ResponseWriter, r *http.Request, u meta.User) {
	req, t, ok := a.lockRequest(w, r, u)
	if !ok {
		return
	}
	var failure error
	switch req.Outcome {
	case "success":
	case "failure":
		failure = fmt.Errorf("the node reported a failure")
	default:
		a.WriteError(w, r, errs.Errorf("api.lock", errs.Invalid, `outcome: "success" or "failure"`))
		return
	}
	if err := a.Locks.Unlock(r.Context(), t.op, t.resource, t.node, failure); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) lockState(w http.ResponseWriter, r *http.Request, u meta.User) {
	q := r.URL.Query()
	t, err := parseLockTarget(u, q.Get("op"), q.Get("resource"), q.Get("node"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.ownerKey(r, u, &t)
	res, err := a.Locks.Inspect(r.Context(), t.op, t.resource, t.node)
	a.writeLockAnswer(w, r, t, res, err)
}

// lockEvents streams the node's wake-ups as Server-Sent Events. The
// reconnect story: the stream subscribes first and then sends a "state"
// event per key the client names (key=op:resource, repeated), so whatever
// happened while the client was away (a grant, a release) is told by its
// effect on the node's standing, and nothing later is missed.
func (a *API) lockEvents(w http.ResponseWriter, r *http.Request, u meta.User) {
	q := r.URL.Query()
	n, err := userNode(u, q.Get("node"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if len(q["key"]) > maxStreamKeys {
		a.WriteError(w, r, errs.Errorf("api.lock", errs.Invalid, "at most %d keys per stream", maxStreamKeys))
		return
	}
	var targets []lockTarget
	for _, k := range q["key"] {
		op, res := lock.SplitKey(k)
		t, err := parseLockTarget(u, op, res, n.ID)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		a.ownerKey(r, u, &t)
		targets = append(targets, t)
	}
	s, ok := a.newSSE(w, r, "api.lock")
	if !ok {
		return
	}
	sub := a.Locks.Subscribe(n)
	defer sub.Close()
	var states []apitype.LockAnswer
	for _, t := range targets {
		res, err := a.Locks.Inspect(r.Context(), t.op, t.resource, t.node)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		st := a.lockAnswer(t, res)
		st.Event = apitype.LockEventState
		states = append(states, st)
	}
	s.begin()
	for _, st := range states {
		s.event(st.Event, st)
	}
	s.flush()
	// last is the standing the client was last told per key: a re-check
	// that finds another one tells it, so an event lost on the way (a
	// Redis restart, a dropped pub/sub message) cannot leave a waiter
	// waiting forever.
	last := map[string]lock.Status{}
	for i, t := range targets {
		last[lock.Key(t.op, t.resource)] = lock.Status(states[i].Status)
	}
	recheck := func() (told bool) {
		for _, t := range targets {
			res, err := a.Locks.Inspect(r.Context(), t.op, t.resource, t.node)
			if err != nil {
				continue // the store is away: try at the next tick
			}
			if k := lock.Key(t.op, t.resource); res.Status != last[k] {
				last[k] = res.Status
				st := a.lockAnswer(t, res)
				st.Event = apitype.LockEventState
				s.event(st.Event, st)
				told = true
			}
		}
		return told
	}
	// Events name the manager's key; the client is told its own name of
	// it (a share's path, not the owner's).
	wires := map[string]string{}
	for _, t := range targets {
		wires[lock.Key(t.op, t.resource)] = t.wire
	}
	onEvent := func(ev lock.Event) {
		op, res := lock.SplitKey(ev.Key)
		wire, ok := wires[ev.Key]
		if !ok {
			wire = wireResource(res)
		}
		wa := apitype.LockAnswer{Op: op, Resource: wire, Event: string(ev.Type),
			Status: string(lock.None), LeaseMs: a.Locks.Lease().Milliseconds()}
		if ev.Type == lock.EventGranted {
			wa.Status = string(lock.Granted)
		}
		last[ev.Key] = lock.Status(wa.Status)
		s.event(wa.Event, wa)
	}
	// sub.C closes when the stream is cut off or the server shuts down: the
	// client reconnects.
	follow(r.Context(), s, a.StreamsDone, a.StreamRecheck, DefaultLockStreamRecheck, sub.C, onEvent, recheck)
}
