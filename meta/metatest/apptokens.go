package metatest

import (
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// App tokens: stored and found with their user by hash in one read; names
// unique per user (not across users); listed by name with their last use;
// revoked by name at once; kept by a new password; ended with their user.
func testAppTokens(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	add := func(uid int64, name, hash string) error {
		return e.s.CreateAppToken(e.ctx, meta.AppToken{TokenHash: hash, UserID: uid, Name: name, Created: e.clock.Now()})
	}
	e.must(add(a, "laptop", "h-a-laptop"))
	e.clock.Advance(time.Second)
	e.must(add(a, "agent", "h-a-agent"))
	e.must(add(b, "laptop", "h-b-laptop"))
	wantKind(t, "a second token named laptop", add(a, "laptop", "h-a-laptop2"), errs.Exists)
	wantKind(t, "a token of nobody", add(9999, "x", "h-x"), errs.NotFound)

	tok, u, err := e.s.AppTokenUser(e.ctx, "h-a-laptop")
	e.must(err)
	if tok.UserID != a || tok.Name != "laptop" || u.ID != a || u.Name != "alice" || !tok.Last.IsZero() {
		t.Fatalf("AppTokenUser = %+v, %+v", tok, u)
	}
	_, _, err = e.s.AppTokenUser(e.ctx, "h-nope")
	wantKind(t, "an unknown token", err, errs.NotFound)

	// Touch moves the last use forward only; a gone token stays gone.
	e.clock.Advance(time.Minute)
	used := e.clock.Now()
	e.must(e.s.TouchAppToken(e.ctx, "h-a-agent", used))
	e.must(e.s.TouchAppToken(e.ctx, "h-a-agent", used.Add(-time.Hour)))
	e.must(e.s.TouchAppToken(e.ctx, "h-gone", used))
	ts, err := e.s.AppTokens(e.ctx, a)
	e.must(err)
	if len(ts) != 2 || ts[0].Name != "agent" || ts[1].Name != "laptop" || !ts[0].Last.Equal(used) || !ts[1].Last.IsZero() ||
		!ts[1].Created.Equal(ts[0].Created.Add(-time.Second)) {
		t.Fatalf("alice's tokens = %+v", ts)
	}

	// A new password keeps the tokens: a device is revoked by name.
	e.must(e.s.SetPassword(e.ctx, a, "new"))
	if _, _, err := e.s.AppTokenUser(e.ctx, "h-a-agent"); err != nil {
		t.Fatalf("a token after a new password: %v", err)
	}
	e.must(e.s.DeleteAppToken(e.ctx, a, "agent"))
	_, _, err = e.s.AppTokenUser(e.ctx, "h-a-agent")
	wantKind(t, "a revoked token", err, errs.NotFound)
	wantKind(t, "revoking it again", e.s.DeleteAppToken(e.ctx, a, "agent"), errs.NotFound)
	wantKind(t, "revoking bob's token as alice", e.s.DeleteAppToken(e.ctx, a, "nope"), errs.NotFound)
	e.must(add(a, "agent", "h-a-agent2")) // the name is free again

	// Deleting a user ends their tokens, and only theirs.
	e.must(e.s.DeleteUser(e.ctx, a))
	_, _, err = e.s.AppTokenUser(e.ctx, "h-a-laptop")
	wantKind(t, "a deleted user's token", err, errs.NotFound)
	if ts, err := e.s.AppTokens(e.ctx, b); err != nil || len(ts) != 1 {
		t.Fatalf("bob's tokens after alice's deletion: %+v %v", ts, err)
	}
}
