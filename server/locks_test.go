package server_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/lock"
	"netdisk/testutil"
)

// Lock API tests against the real daemon (docs/API.md, "Locks").

type lockEnv struct {
	t     *testing.T
	d     *testutil.Daemon
	admin *client.Client
}

func newLockEnv(t *testing.T, d *testutil.Daemon) *lockEnv {
	return &lockEnv{t: t, d: d, admin: client.New(d.URL, "admin", d.AdminPass)}
}

func (e *lockEnv) user(name string) *client.Client {
	e.t.Helper()
	if _, err := e.admin.AdminAddUser(context.Background(), apitype.NewUser{Name: name, Password: name + "-pass-1"}); err != nil {
		e.t.Fatal(err)
	}
	return client.New(e.d.URL, name, name+"-pass-1")
}

func upload(t *testing.T, c *client.Client, p string, body []byte) string {
	t.Helper()
	r, err := c.Upload(context.Background(), p, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	return r.FileHash
}

func wantStatus(t *testing.T, what string, a apitype.LockAnswer, err error, st lock.Status, pos int) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if lock.Status(a.Status) != st || a.Position != pos {
		t.Fatalf("%s = %s at %d, want %s at %d", what, a.Status, a.Position, st, pos)
	}
}

func wantErr(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	var e *client.Error
	if !errorsAs(err, &e) || e.Status != status || (code != "" && e.Code != code) {
		t.Fatalf("%s: %v, want %d %s", what, err, status, code)
	}
}

func errorsAs(err error, e **client.Error) bool {
	x, ok := err.(*client.Error)
	if ok {
		*e = x
	}
	return ok
}

func nextEvent(t *testing.T, s *client.EventStream) apitype.LockAnswer {
	t.Helper()
	type r struct {
		a   apitype.LockAnswer
		err error
	}
	c := make(chan r, 1)
	go func() { a, err := s.Next(); c <- r{a, err} }()
	select {
	case x := <-c:
		if x.err != nil {
			t.Fatalf("event stream: %v", x.err)
		}
		return x.a
	case <-time.After(20 * time.Second):
		t.Fatal("no event within 20s")
	}
	return apitype.LockAnswer{}
}

// openEvents opens node's event stream on key, closed when the test ends,
// and checks that it opens with the key's state: st at position pos.
func openEvents(t *testing.T, c *client.Client, node, key string, st lock.Status, pos int) *client.EventStream {
	t.Helper()
	s, err := c.LockEvents(context.Background(), node, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	wantEvent(t, s, "state", st, pos)
	return s
}

func wantEvent(t *testing.T, s *client.EventStream, event string, st lock.Status, pos int) {
	t.Helper()
	a := nextEvent(t, s)
	if a.Event != event || lock.Status(a.Status) != st || a.Position != pos {
		t.Fatalf("event %s %s at %d, want %s %s at %d", a.Event, a.Status, a.Position, event, st, pos)
	}
}

// TestLockScoping: content locks are shared only by users who hold the
// content; path locks are each user's own; a node is its user's.
func TestLockScoping(t *testing.T) {
	e := newLockEnv(t, testutil.StartDaemon(t))
	ctx := context.Background()
	alice, bob, carol := e.user("alice"), e.user("bob"), e.user("carol")
	h := upload(t, alice, "/a.txt", []byte("shared bytes"))
	if hb := upload(t, bob, "/b.txt", []byte("shared bytes")); hb != h {
		t.Fatalf("same content, hashes %s and %s", h, hb)
	}
	upload(t, carol, "/c.txt", []byte("other bytes"))
	res := client.ContentResource(h)

	a, err := alice.TryLock(ctx, "pull", res, "n1", "/a.txt")
	wantStatus(t, "alice try", a, err, lock.Acquired, 0)
	if a.LeaseMs != lock.DefaultLease.Milliseconds() || a.Deadline == nil || a.Resource != res || a.Op != "pull" {
		t.Fatalf("answer %+v", a)
	}
	a, err = bob.TryLock(ctx, "pull", res, "n1", "/b.txt") // same node name, another user: another node
	wantStatus(t, "bob try", a, err, lock.Queued, 1)

	// Carol cannot lock content she does not hold, and cannot tell a
	// missing path from one with other content.
	_, err1 := carol.TryLock(ctx, "pull", res, "c1", "/c.txt")
	wantErr(t, "carol try with her other file", err1, 404, "not_found")
	_, err2 := carol.TryLock(ctx, "pull", res, "c1", "/nope")
	wantErr(t, "carol try with no file", err2, 404, "not_found")
	if err1.Error() != err2.Error() {
		t.Fatalf("different answers reveal something: %q vs %q", err1, err2)
	}
	_, err = carol.TryLock(ctx, "pull", res, "c1", "")
	wantErr(t, "carol try without a path", err, 404, "not_found")
	// Bob cannot use the path of alice's file either: paths are his own.
	_, err = bob.TryLock(ctx, "pull", res, "n2", "/a.txt")
	wantErr(t, "bob try with alice's path", err, 404, "not_found")

	// Bob cannot unlock or renew alice's node.
	err = bob.Unlock(ctx, "pull", res, "n2", true)
	wantErr(t, "bob unlocks a lock he neither holds nor waits for", err, 409, "conflict")
	_, err = bob.Heartbeat(ctx, "pull", res, "n1")
	wantErr(t, "bob heartbeats as a waiter", err, 409, "conflict")
	a, err = alice.LockState(ctx, "pull", res, "n1")
	wantStatus(t, "alice still holds", a, err, lock.Acquired, 0)
	a, err = carol.LockState(ctx, "pull", res, "n1")
	wantStatus(t, "carol's standing", a, err, lock.None, 0)

	// Path locks are per user: the same path of two users never collides.
	a, err = alice.TryLock(ctx, "update", client.PathResource("/x/../x"), "n1", "")
	if err == nil {
		t.Fatalf("a path with '..' was accepted: %+v", a)
	}
	a, err = alice.TryLock(ctx, "update", client.PathResource("/x"), "n1", "")
	wantStatus(t, "alice update /x", a, err, lock.Acquired, 0)
	a, err = bob.TryLock(ctx, "update", client.PathResource("/x"), "n1", "")
	wantStatus(t, "bob update /x", a, err, lock.Acquired, 0)
	a, err = alice.TryLock(ctx, "update", client.PathResource("/x"), "n2", "")
	wantStatus(t, "alice's second node", a, err, lock.Queued, 1)

	for _, c := range []struct{ op, res, node string }{
		{"Pull", res, "n"}, {"", res, "n"}, {"pull", "content:XYZ", "n"}, {"pull", "path:rel", "n"},
		{"pull", "file:/a", "n"}, {"pull", res, ""}, {"pull", res, "a/b"}, {"pull", res, string(make([]byte, 200))},
	} {
		_, err := alice.TryLock(ctx, c.op, c.res, c.node, "/a.txt")
		wantErr(t, "bad request "+c.op+" "+c.res+" "+c.node, err, 400, "invalid")
	}
	err = alice.Unlock(ctx, "pull", res, "n1", false) // a failure: the lock passes to bob
	if err != nil {
		t.Fatal(err)
	}
	a, err = bob.LockState(ctx, "pull", res, "n1")
	wantStatus(t, "bob after alice failed", a, err, lock.Granted, 0)

	// Chunk locks: only with a file of the caller holding the chunk.
	cl, err := alice.Chunks(ctx, "/a.txt")
	if err != nil || len(cl.Chunks) != 1 {
		t.Fatalf("chunks of /a.txt: %+v %v", cl, err)
	}
	chunk := "chunk:" + cl.Chunks[0].SHA256
	a, err = bob.TryLock(ctx, "pull", chunk, "n1", "/b.txt")
	wantStatus(t, "bob chunk lock", a, err, lock.Acquired, 0)
	a, err = alice.TryLock(ctx, "pull", chunk, "n1", "/a.txt")
	wantStatus(t, "alice chunk lock", a, err, lock.Queued, 1)
	_, err = carol.TryLock(ctx, "pull", chunk, "c1", "/c.txt")
	wantErr(t, "carol chunk lock", err, 404, "not_found")
	_, err = alice.TryLock(ctx, "pull", "chunk:abc", "n1", "/a.txt")
	wantErr(t, "bad chunk", err, 400, "invalid")

	anon := client.New(e.d.URL, "", "")
	_, err = anon.LockState(ctx, "pull", res, "n1")
	wantErr(t, "anonymous", err, 401, "")
}

// TestLockEventsReconnect: waiters are woken over SSE; a node that was
// disconnected learns on reconnect what happened meanwhile (its standing),
// for a success (none: re-check) and a failure (granted: claim it).
func TestLockEventsReconnect(t *testing.T) {
	e := newLockEnv(t, testutil.StartDaemon(t))
	ctx := context.Background()
	alice, bob := e.user("alice"), e.user("bob")
	h := upload(t, alice, "/a.txt", []byte("shared bytes"))
	upload(t, bob, "/b.txt", []byte("shared bytes"))
	res := client.ContentResource(h)
	key := lock.Key("pull", res)

	a, err := alice.TryLock(ctx, "pull", res, "a1", "/a.txt")
	wantStatus(t, "alice", a, err, lock.Acquired, 0)
	a, err = bob.TryLock(ctx, "pull", res, "b1", "/b.txt")
	wantStatus(t, "bob", a, err, lock.Queued, 1)
	sb := openEvents(t, bob, "b1", key, lock.Queued, 1)
	if err := alice.Unlock(ctx, "pull", res, "a1", false); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, sb, "granted", lock.Granted, 0)
	sb.Close()

	// Bob claims; alice waits and drops her stream; bob succeeds meanwhile.
	a, err = bob.TryLock(ctx, "pull", res, "b1", "/b.txt")
	wantStatus(t, "bob claims", a, err, lock.Acquired, 0)
	a, err = alice.TryLock(ctx, "pull", res, "a1", "/a.txt")
	wantStatus(t, "alice waits", a, err, lock.Queued, 1)
	sa := openEvents(t, alice, "a1", key, lock.Queued, 1)
	sa.Close()
	if err := bob.Unlock(ctx, "pull", res, "b1", true); err != nil {
		t.Fatal(err)
	}
	sa = openEvents(t, alice, "a1", key, lock.None, 0) // released while away: re-check
	sa.Close()

	// Again, with a failure while alice is away: she finds the grant.
	a, err = bob.TryLock(ctx, "pull", res, "b1", "/b.txt")
	wantStatus(t, "bob again", a, err, lock.Acquired, 0)
	a, err = alice.TryLock(ctx, "pull", res, "a1", "/a.txt")
	wantStatus(t, "alice again", a, err, lock.Queued, 1)
	if err := bob.Unlock(ctx, "pull", res, "b1", false); err != nil {
		t.Fatal(err)
	}
	sa = openEvents(t, alice, "a1", key, lock.Granted, 0)

	// Another user's stream for the same node name hears nothing of it:
	// bob's "a1" is not alice's.
	a, err = bob.LockState(ctx, "pull", res, "a1")
	wantStatus(t, "bob's a1", a, err, lock.None, 0)

	// The stream answers as an event stream.
	req, _ := alice.NewRequest(ctx, http.MethodGet, "/api/v1/lock/events", map[string][]string{"node": {"a1"}}, nil)
	resp, err := alice.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// TestLockLeaseAndBounds: a holder that stops heart-beating loses the lock
// to the next waiter (woken over SSE); queues past their bound answer 429;
// with --multi-node-pull=false a busy lock is refused.
func TestLockLeaseAndBounds(t *testing.T) {
	e := newLockEnv(t, testutil.StartDaemon(t, "--lock-lease", "300ms", "--lock-max-queue", "2"))
	ctx := context.Background()
	res := client.PathResource("/job")
	a, err := e.admin.TryLock(ctx, "update", res, "dead", "")
	wantStatus(t, "holder", a, err, lock.Acquired, 0)
	a, err = e.admin.TryLock(ctx, "update", res, "w1", "")
	wantStatus(t, "w1", a, err, lock.Queued, 1)
	a, err = e.admin.TryLock(ctx, "update", res, "w2", "")
	wantStatus(t, "w2", a, err, lock.Queued, 2)
	_, err = e.admin.TryLock(ctx, "update", res, "w3", "")
	wantErr(t, "third waiter", err, 429, "too_many_requests")

	s := openEvents(t, e.admin, "w1", lock.Key("update", res), lock.Queued, 1)
	// "dead" never heart-beats: the daemon's sweep passes the lock on.
	wantEvent(t, s, "granted", lock.Granted, 0)
	a, err = e.admin.LockState(ctx, "update", res, "dead")
	wantStatus(t, "the dead holder", a, err, lock.None, 0)

	single := newLockEnv(t, testutil.StartDaemon(t, "--multi-node-pull=false"))
	a, err = single.admin.TryLock(ctx, "pull", res, "n1", "")
	wantStatus(t, "first", a, err, lock.Acquired, 0)
	a, err = single.admin.TryLock(ctx, "pull", res, "n2", "")
	wantStatus(t, "second, single-node mode", a, err, lock.Refused, 0)
	a, err = single.admin.LockState(ctx, "pull", res, "n2")
	wantStatus(t, "refused is not queued", a, err, lock.None, 0)
}

// TestLockTwoDaemonsOneRedis: daemons sharing one Redis share the queues,
// and an unlock on one wakes a waiter streaming from the other.
func TestLockTwoDaemonsOneRedis(t *testing.T) {
	r := testutil.StartRedis(t)
	d1 := newLockEnv(t, testutil.StartDaemon(t, "--redis", r.URL))
	d2 := newLockEnv(t, testutil.StartDaemon(t, "--redis", r.URL))
	ctx := context.Background()
	h := upload(t, d1.admin, "/f.bin", []byte("the same content on both"))
	upload(t, d2.admin, "/f.bin", []byte("the same content on both"))
	res := client.ContentResource(h)
	a, err := d1.admin.TryLock(ctx, "pull", res, "A", "/f.bin")
	wantStatus(t, "A on daemon 1", a, err, lock.Acquired, 0)
	a, err = d2.admin.TryLock(ctx, "pull", res, "B", "/f.bin")
	wantStatus(t, "B on daemon 2", a, err, lock.Queued, 1)
	a, err = d1.admin.TryLock(ctx, "pull", res, "C", "/f.bin")
	wantStatus(t, "C on daemon 1", a, err, lock.Queued, 2)
	sb := openEvents(t, d2.admin, "B", lock.Key("pull", res), lock.Queued, 1)
	sc := openEvents(t, d1.admin, "C", lock.Key("pull", res), lock.Queued, 2)
	if err := d1.admin.Unlock(ctx, "pull", res, "A", false); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, sb, "granted", lock.Granted, 0)
	a, err = d2.admin.TryLock(ctx, "pull", res, "B", "/f.bin")
	wantStatus(t, "B claims on daemon 2", a, err, lock.Acquired, 0)
	if err := d2.admin.Unlock(ctx, "pull", res, "B", true); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, sc, "released", lock.None, 0)
}

// TestLockStreamRecheck: events lost with a Redis that lost its state
// (flushed, restarted empty) do not leave a waiter waiting forever: the
// stream re-reads its keys' standing and tells the change.
func TestLockStreamRecheck(t *testing.T) {
	r := testutil.StartRedis(t)
	e := newLockEnv(t, testutil.StartDaemon(t, "--redis", r.URL, "--lock-stream-recheck", "200ms"))
	ctx := context.Background()
	res := client.PathResource("/job")
	a, err := e.admin.TryLock(ctx, "update", res, "holder", "")
	wantStatus(t, "holder", a, err, lock.Acquired, 0)
	a, err = e.admin.TryLock(ctx, "update", res, "waiter", "")
	wantStatus(t, "waiter", a, err, lock.Queued, 1)
	s := openEvents(t, e.admin, "waiter", lock.Key("update", res), lock.Queued, 1)
	r.FlushAll() // the lock and its queue are gone, and no event says so
	wantEvent(t, s, "state", lock.None, 0)
	_, err = e.admin.Heartbeat(ctx, "update", res, "holder")
	wantErr(t, "the holder's heartbeat", err, 409, "conflict")
}
