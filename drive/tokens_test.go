package drive_test

import (
	"context"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/testutil"
)

// A token signs in only its own user, by any case of the name; its use is
// recorded at most once a minute (on the drive's clock); a request signed
// in by a token cannot make or revoke tokens nor change the password; a
// revoked token signs nobody in; a password change keeps tokens.
func TestAppTokenRules(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	e := drivetest.New(t, drivetest.Options{Clock: clock})
	ctx := context.Background()
	alice := e.AddUser(t, "alice", 0)
	e.AddUser(t, "bob", 0)
	secret, _, err := e.Drive.AddToken(ctx, alice.ID, "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if !drive.LooksLikeToken(secret) {
		t.Fatalf("token %q does not look like one", secret)
	}
	if _, _, ok := e.Drive.AuthenticateToken(ctx, "bob", secret); ok {
		t.Fatal("alice's token signed bob in")
	}
	lastUse := func() time.Time {
		t.Helper()
		ts, err := e.Drive.Tokens(ctx, alice.ID)
		if err != nil || len(ts) != 1 {
			t.Fatalf("tokens: %+v %v", ts, err)
		}
		return ts[0].Last
	}
	if !lastUse().IsZero() {
		t.Fatal("a token never used has a last use")
	}
	u, name, ok := e.Drive.AuthenticateToken(ctx, "ALICE", secret)
	if !ok || u.ID != alice.ID || name != "laptop" {
		t.Fatalf("AuthenticateToken = %+v %q %v", u, name, ok)
	}
	first := clock.Now()
	if !lastUse().Equal(first) {
		t.Fatalf("last use %v, want %v", lastUse(), first)
	}
	clock.Advance(59 * time.Second)
	e.Drive.AuthenticateToken(ctx, "alice", secret)
	if !lastUse().Equal(first) {
		t.Fatal("a use within the minute was written")
	}
	clock.Advance(time.Second)
	e.Drive.AuthenticateToken(ctx, "alice", secret)
	if !lastUse().Equal(clock.Now()) {
		t.Fatal("a use a minute later was not recorded")
	}

	byToken := drive.WithToken(ctx, "laptop")
	if _, _, err := e.Drive.AddToken(byToken, alice.ID, "other"); !errs.Is(err, errs.Permission) {
		t.Fatalf("AddToken signed in by a token: %v, want Permission", err)
	}
	if err := e.Drive.RemoveToken(byToken, alice.ID, "laptop"); !errs.Is(err, errs.Permission) {
		t.Fatalf("RemoveToken signed in by a token: %v, want Permission", err)
	}
	pass := drivetest.Password("alice")
	if err := e.Drive.ChangePassword(byToken, alice.ID, pass, "new-pass"); !errs.Is(err, errs.Permission) {
		t.Fatalf("ChangePassword signed in by a token: %v, want Permission", err)
	}
	if err := e.Drive.ChangePassword(ctx, alice.ID, "wrong", "new-pass"); !errs.Is(err, errs.Permission) {
		t.Fatalf("ChangePassword with a wrong current password: %v, want Permission", err)
	}
	if err := e.Drive.ChangePassword(ctx, alice.ID, pass, "new-pass"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Drive.AuthenticateToken(ctx, "alice", secret); !ok {
		t.Fatal("the token after a password change refused")
	}
	if err := e.Drive.RemoveToken(ctx, alice.ID, "laptop"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := e.Drive.AuthenticateToken(ctx, "alice", secret); ok {
		t.Fatal("a revoked token signed in")
	}
}
