package metatest

import (
	"errors"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// The parts of a sync client's chunked upload: recorded with their session
// (a part sent again replaces its pieces), listed by part and place, kept
// from GC while their session lives and gone with it; the session's target
// is set at the end; a session that is gone refuses parts.
func testSessionParts(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "p1", "parts:1", 100, "")
	c0, c1, c2 := chunk("part-a", 40), chunk("part-b", 30), chunk("part-c", 50)
	e.must(e.s.PutSessionPart(e.ctx, "p1", "0", []meta.Chunk{c0, c1}, e.clock.Now()))
	e.clock.Advance(time.Second)
	e.must(e.s.PutSessionPart(e.ctx, "p1", "70", []meta.Chunk{c2}, e.clock.Now()))
	e.must(e.s.PutSessionPart(e.ctx, "p1", "0", []meta.Chunk{c1}, e.clock.Now())) // sent again
	ps, err := e.s.SessionPieces(e.ctx, "p1")
	e.must(err)
	if len(ps) != 2 || ps[0].Part != "0" || ps[0].Chunk.SHA256 != c1.SHA256 || ps[0].Chunk.ID == 0 ||
		ps[1].Part != "70" || ps[1].Chunk.SHA256 != c2.SHA256 || !ps[1].Touched.Equal(e.clock.Now()) {
		t.Fatalf("SessionPieces = %+v", ps)
	}
	un, err := e.s.UnreferencedChunks(e.ctx, 10)
	e.must(err)
	if len(un) != 1 || un[0].SHA256 != c0.SHA256 {
		t.Fatalf("garbage while the parts are held: %+v (want only the replaced piece)", un)
	}
	if ss, err := e.s.Session(e.ctx, a, "p1"); err != nil || !ss.Touched.Equal(e.clock.Now()) {
		t.Fatalf("a part does not touch its session: %+v %v", ss, err)
	}
	e.must(e.s.SetSessionPath(e.ctx, "p1", "/f.bin"))
	if ss, err := e.s.Session(e.ctx, a, "p1"); err != nil || ss.Path != "/f.bin" {
		t.Fatalf("the target set: %+v %v", ss, err)
	}
	if err := e.s.SetSessionPath(e.ctx, "nope", "/g"); !errors.Is(err, meta.ErrNoSession) {
		t.Fatalf("target of no session: %v", err)
	}
	_, _, err = e.s.DropSession(e.ctx, "p1", e.clock.Now())
	e.must(err)
	if ps, err := e.s.SessionPieces(e.ctx, "p1"); err != nil || len(ps) != 0 {
		t.Fatalf("pieces of a dropped session: %+v %v", ps, err)
	}
	if un, err := e.s.UnreferencedChunks(e.ctx, 10); err != nil || len(un) != 3 {
		t.Fatalf("garbage once the session is dropped: %+v %v", un, err)
	}
	if err := e.s.PutSessionPart(e.ctx, "p1", "0", []meta.Chunk{c0}, e.clock.Now()); !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("a part of a dropped session: %v", err)
	}
}

// Login flows: found pending by the login hash, granted once, collected
// once by the poll hash (pending: found, not taken), every method blind to
// an expired flow; the cap counts live flows only; a user's deletion ends
// the flows they granted.
func testLoginFlows(t *testing.T, e *env) {
	a := e.user("alice", 0)
	now := e.clock.Now()
	f := meta.LoginFlow{PollHash: "poll-1", LoginHash: "login-1", Device: "desktop", Server: "http://x", Expires: now.Add(time.Minute)}
	e.must(e.s.AddLoginFlow(e.ctx, f, 2, now))
	if got, err := e.s.PendingLoginFlow(e.ctx, "login-1", now); err != nil || got.Device != "desktop" || got.Server != "http://x" || got.UserID != 0 {
		t.Fatalf("PendingLoginFlow = %+v %v", got, err)
	}
	_, err := e.s.PendingLoginFlow(e.ctx, "poll-1", now)
	wantKind(t, "a pending flow by its poll hash", err, errs.NotFound)
	if got, err := e.s.TakeLoginFlow(e.ctx, "poll-1", now); err != nil || got.UserID != 0 {
		t.Fatalf("a pending flow polled: %+v %v", got, err)
	}
	wantKind(t, "a grant by the poll hash", e.s.GrantLoginFlow(e.ctx, "poll-1", a, now), errs.NotFound)
	e.must(e.s.GrantLoginFlow(e.ctx, "login-1", a, now))
	wantKind(t, "a second grant", e.s.GrantLoginFlow(e.ctx, "login-1", a, now), errs.NotFound)
	_, err = e.s.PendingLoginFlow(e.ctx, "login-1", now)
	wantKind(t, "a granted flow as pending", err, errs.NotFound)
	if got, err := e.s.TakeLoginFlow(e.ctx, "poll-1", now); err != nil || got.UserID != a || got.Device != "desktop" {
		t.Fatalf("the granted flow collected: %+v %v", got, err)
	}
	_, err = e.s.TakeLoginFlow(e.ctx, "poll-1", now)
	wantKind(t, "a flow collected twice", err, errs.NotFound)

	// Expiry and the cap.
	e.must(e.s.AddLoginFlow(e.ctx, meta.LoginFlow{PollHash: "p2", LoginHash: "l2", Expires: now.Add(time.Minute)}, 2, now))
	e.must(e.s.AddLoginFlow(e.ctx, meta.LoginFlow{PollHash: "p3", LoginHash: "l3", Expires: now.Add(2 * time.Minute)}, 2, now))
	wantKind(t, "a flow beyond the cap", e.s.AddLoginFlow(e.ctx, meta.LoginFlow{PollHash: "p4", LoginHash: "l4", Expires: now.Add(time.Minute)}, 2, now), errs.Throttled)
	later := now.Add(time.Minute)
	_, err = e.s.PendingLoginFlow(e.ctx, "l2", later)
	wantKind(t, "an expired flow", err, errs.NotFound)
	wantKind(t, "a grant of an expired flow", e.s.GrantLoginFlow(e.ctx, "l2", a, later), errs.NotFound)
	_, err = e.s.TakeLoginFlow(e.ctx, "p2", later)
	wantKind(t, "a poll of an expired flow", err, errs.NotFound)
	e.must(e.s.AddLoginFlow(e.ctx, meta.LoginFlow{PollHash: "p4", LoginHash: "l4", Expires: later.Add(time.Minute)}, 2, later))

	// A user's deletion ends what they granted.
	e.must(e.s.GrantLoginFlow(e.ctx, "l3", a, later))
	e.must(e.s.DeleteUser(e.ctx, a))
	_, err = e.s.TakeLoginFlow(e.ctx, "p3", later)
	wantKind(t, "a flow granted by a deleted user", err, errs.NotFound)
}
