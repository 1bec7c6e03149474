package drive_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
)

func newAdminDrive(t *testing.T) *drive.Drive { return drivetest.New(t, drivetest.Options{}).Drive }

func TestDeleteUserAsKeepsAnAdmin(t *testing.T) {
	ctx := context.Background()
	d := newAdminDrive(t)
	root, err := d.AddUser(ctx, "root", "pw", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := d.AddUser(ctx, "plain", "pw", false, 0)

	if last, err := d.IsLastAdmin(ctx, root); err != nil || !last {
		t.Fatalf("IsLastAdmin(root) = %v, %v; want true", last, err)
	}
	if last, _ := d.IsLastAdmin(ctx, plain); last {
		t.Fatal("a non-admin is never the last admin")
	}
	if err := d.DeleteUserAs(ctx, root, "root"); !errs.Is(err, errs.Conflict) {
		t.Fatalf("deleting yourself: %v, want Conflict", err)
	}
	// Another caller (e.g. a future offline tool acting as a non-admin)
	// still cannot remove the last admin.
	if err := d.DeleteUserAs(ctx, plain, "root"); !errs.Is(err, errs.Conflict) {
		t.Fatalf("deleting the last admin: %v, want Conflict", err)
	}
	if err := d.DeleteUserAs(ctx, root, "nobody"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("deleting nobody: %v, want NotFound", err)
	}
	if err := d.DeleteUserAs(ctx, root, "plain"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.User(ctx, "plain"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("plain after delete: %v", err)
	}
}

// Two admins deleting each other at once: exactly one succeeds, so an admin
// always remains.
func TestDeleteUserAsRace(t *testing.T) {
	ctx := context.Background()
	for i := range 5 {
		d := newAdminDrive(t)
		a, _ := d.AddUser(ctx, "a", "pw", true, 0)
		b, _ := d.AddUser(ctx, "b", "pw", true, 0)
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); errA = d.DeleteUserAs(ctx, a, "b") }()
		go func() { defer wg.Done(); errB = d.DeleteUserAs(ctx, b, "a") }()
		wg.Wait()
		if (errA == nil) == (errB == nil) {
			t.Fatalf("round %d: a→b %v, b→a %v; want exactly one to succeed", i, errA, errB)
		}
		us, err := d.Users(ctx)
		if err != nil || len(us) != 1 || !us[0].IsAdmin {
			t.Fatalf("round %d: users left %+v, %v", i, us, err)
		}
	}
}

// Deleting a user ends what they held beside their tree: WebDAV locks (and
// so their tokens), web sessions, remembered credentials; and an account
// made again under the same name and password is a new one, with a new id.
func TestDeleteUserEndsWhatTheyHeld(t *testing.T) {
	ctx := context.Background()
	d := newAdminDrive(t)
	alice, err := d.AddUser(ctx, "alice", "pw", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Locks().Create(alice.ID, davlock.Lock{Root: "/f", Timeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	now := d.Now()
	if err := d.WebSessions().CreateWebSession(ctx, meta.WebSession{TokenHash: "h", UserID: alice.ID, CSRF: "c", Created: now, Last: now}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Authenticate(ctx, "alice", "pw"); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if n := d.Locks().Count(alice.ID); n != 0 {
		t.Fatalf("the deleted user's WebDAV locks: %d left", n)
	}
	if _, err := d.WebSessions().WebSession(ctx, "h"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the deleted user's web session: %v, want NotFound", err)
	}
	if _, ok := d.AuthenticateCached(ctx, "alice", "pw"); ok {
		t.Fatal("the deleted user's remembered password still signs in")
	}
	again, err := d.AddUser(ctx, "alice", "pw", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == alice.ID {
		t.Fatalf("the new alice has the deleted alice's id %d", alice.ID)
	}
	if n := d.Locks().Count(again.ID); n != 0 {
		t.Fatalf("the new alice holds %d locks", n)
	}
}
