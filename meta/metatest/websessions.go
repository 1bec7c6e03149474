package metatest

import (
	"fmt"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// A deleted user's id is never given again, also when it was the highest
// (SQLite without AUTOINCREMENT gave it to the next user) and when every
// user is gone.
func testUserIDsNeverReused(t *testing.T, e *env) {
	seen := map[int64]string{}
	fresh := func(name string) int64 {
		t.Helper()
		id := e.user(name, 0)
		if old, ok := seen[id]; ok {
			t.Fatalf("%s got id %d, the id of deleted user %s", name, id, old)
		}
		seen[id] = name
		return id
	}
	a := fresh("alice")
	b := fresh("bob")
	e.must(e.s.DeleteUser(e.ctx, b))
	c := fresh("carol")
	e.must(e.s.DeleteUser(e.ctx, c))
	// The same name again is a new account, not the old one back.
	fresh("carol")
	e.must(e.s.DeleteUser(e.ctx, a))
	us, err := e.s.ListUsers(e.ctx)
	e.must(err)
	for _, u := range us {
		e.must(e.s.DeleteUser(e.ctx, u.ID))
	}
	fresh("dave")
}

func (e *env) webSession(uid int64, token string) meta.WebSession {
	e.t.Helper()
	now := e.clock.Now()
	ws := meta.WebSession{TokenHash: "hash-" + token, UserID: uid, CSRF: "csrf-" + token, Created: now, Last: now}
	e.must(e.s.CreateWebSession(e.ctx, ws, 3))
	return ws
}

func (e *env) hasWebSession(token string) bool {
	e.t.Helper()
	_, err := e.s.WebSession(e.ctx, "hash-"+token)
	if err != nil && !errs.Is(err, errs.NotFound) {
		e.t.Fatal(err)
	}
	return err == nil
}

// Web sessions: stored and found by token hash; bounded per user (the
// oldest end); ended by a new password, by the user's deletion, one by one
// and by expiry; and other users' sessions are never touched.
func testWebSessions(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	want := e.webSession(a, "a1")
	got, err := e.s.WebSession(e.ctx, "hash-a1")
	e.must(err)
	if got.UserID != a || got.CSRF != "csrf-a1" || !got.Created.Equal(want.Created) || !got.Last.Equal(want.Last) {
		t.Fatalf("WebSession = %+v, want %+v", got, want)
	}
	_, err = e.s.WebSession(e.ctx, "hash-nope")
	wantKind(t, "an unknown session", err, errs.NotFound)
	err = e.s.CreateWebSession(e.ctx, meta.WebSession{TokenHash: "hash-x", UserID: 9999, Created: e.clock.Now(), Last: e.clock.Now()}, 3)
	wantKind(t, "a session of nobody", err, errs.NotFound)

	// Touch moves the last use forward only.
	e.clock.Advance(time.Minute)
	e.must(e.s.TouchWebSession(e.ctx, "hash-a1", e.clock.Now()))
	e.must(e.s.TouchWebSession(e.ctx, "hash-a1", e.clock.Now().Add(-time.Hour)))
	if got, _ := e.s.WebSession(e.ctx, "hash-a1"); !got.Last.Equal(e.clock.Now()) {
		t.Fatalf("last use %v, want %v", got.Last, e.clock.Now())
	}
	e.must(e.s.TouchWebSession(e.ctx, "hash-gone", e.clock.Now()))
	if e.hasWebSession("gone") {
		t.Fatal("touching a missing session created it")
	}

	// At most 3 per user: the fourth and fifth sign-ins end the two oldest.
	for i := 2; i <= 5; i++ {
		e.clock.Advance(time.Second)
		e.webSession(a, fmt.Sprint("a", i))
	}
	e.webSession(b, "b1")
	for tok, live := range map[string]bool{"a1": false, "a2": false, "a3": true, "a4": true, "a5": true, "b1": true} {
		if e.hasWebSession(tok) != live {
			t.Fatalf("session %s live = %v, want %v", tok, !live, live)
		}
	}

	e.must(e.s.DeleteWebSession(e.ctx, "hash-a3"))
	e.must(e.s.DeleteWebSession(e.ctx, "hash-a3"))
	if e.hasWebSession("a3") {
		t.Fatal("a deleted session is found")
	}

	// A new password ends every session of that user, and only theirs.
	e.must(e.s.SetPassword(e.ctx, a, "new"))
	if e.hasWebSession("a4") || e.hasWebSession("a5") || !e.hasWebSession("b1") {
		t.Fatal("SetPassword: alice's sessions survive or bob's ended")
	}
	e.webSession(a, "a6")
	n, err := e.s.DeleteUserWebSessions(e.ctx, a)
	e.must(err)
	if n != 1 || e.hasWebSession("a6") || !e.hasWebSession("b1") {
		t.Fatalf("DeleteUserWebSessions ended %d", n)
	}

	// Expiry: by last use, or by creation however recently used.
	e.webSession(a, "idle")
	e.clock.Advance(time.Hour)
	e.webSession(a, "busy")
	e.clock.Advance(time.Hour)
	e.must(e.s.TouchWebSession(e.ctx, "hash-busy", e.clock.Now()))
	e.webSession(a, "new")
	now := e.clock.Now()
	n, err = e.s.DeleteExpiredWebSessions(e.ctx, now.Add(-90*time.Minute), now.Add(-3*time.Hour))
	e.must(err)
	if n != 2 || e.hasWebSession("idle") || !e.hasWebSession("busy") || !e.hasWebSession("new") {
		t.Fatalf("idle expiry ended %d", n) // idle and b1 (last used at the start)
	}
	n, err = e.s.DeleteExpiredWebSessions(e.ctx, now.Add(-90*time.Minute), now.Add(-30*time.Minute))
	e.must(err)
	if n != 1 || e.hasWebSession("busy") || !e.hasWebSession("new") {
		t.Fatalf("absolute expiry ended %d", n)
	}

	// Deleting the user ends the rest.
	e.must(e.s.DeleteUser(e.ctx, a))
	if e.hasWebSession("new") {
		t.Fatal("a deleted user's session is found")
	}
}
