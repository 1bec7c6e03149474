package metatest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// OpenShared returns two stores over one fresh, empty database, as two
// nodes (or two processes) sharing it would open it.
type OpenShared func(t *testing.T, now func() time.Time) (a, b meta.Store)

// RunShared runs the rules that must hold across every node sharing one
// database, not only within one store value.
func RunShared(t *testing.T, open OpenShared) {
	t.Run("LastAdminAcrossNodes", func(t *testing.T) { testLastAdminAcrossNodes(t, open) })
}

// Two nodes each deleting one of the last two admins at the same moment:
// exactly one delete succeeds, so an admin always remains. A check made
// outside the delete's transaction lets both pass (each still sees the
// other); enough rounds with both callers released together make that
// visible.
func testLastAdminAcrossNodes(t *testing.T, open OpenShared) {
	c := testutil.NewClock(t0)
	a, b := open(t, c.Now)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := context.Background()
	const rounds = 40
	for i := range rounds {
		x, err := a.CreateUser(ctx, fmt.Sprintf("x%d", i), "h", true, 0)
		if err != nil {
			t.Fatal(err)
		}
		y, err := b.CreateUser(ctx, fmt.Sprintf("y%d", i), "h", true, 0)
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var errX, errY error
		wg.Add(2)
		go func() { defer wg.Done(); <-start; errX = a.DeleteUserKeepingAdmin(ctx, y.ID) }()
		go func() { defer wg.Done(); <-start; errY = b.DeleteUserKeepingAdmin(ctx, x.ID) }()
		close(start)
		wg.Wait()
		if (errX == nil) == (errY == nil) {
			t.Fatalf("round %d: node a deleting y: %v; node b deleting x: %v; want exactly one to succeed", i, errX, errY)
		}
		failed := errX
		if failed == nil {
			failed = errY
		}
		if !errs.Is(failed, errs.Conflict) || !errors.Is(failed, meta.ErrLastAdmin) {
			t.Fatalf("round %d: the refused delete: %v (kind %v), want Conflict wrapping ErrLastAdmin", i, failed, errs.KindOf(failed))
		}
		us, err := b.ListUsers(ctx)
		if err != nil || len(us) != 1 || !us[0].IsAdmin {
			t.Fatalf("round %d: users left %+v, %v; want the one admin", i, us, err)
		}
		// The plain delete has no such rule: it clears the round.
		if err := a.DeleteUser(ctx, us[0].ID); err != nil {
			t.Fatal(err)
		}
	}
}

// DeleteUserKeepingAdmin deletes anyone but the last admin.
func testLastAdmin(t *testing.T, e *env) {
	root, err := e.s.CreateUser(e.ctx, "root", "h", true, 0)
	e.must(err)
	plain := e.user("plain", 0)
	wantKind(t, "deleting the last admin", e.s.DeleteUserKeepingAdmin(e.ctx, root.ID), errs.Conflict)
	if _, err := e.s.UserByID(e.ctx, root.ID); err != nil {
		t.Fatalf("the last admin after a refused delete: %v", err)
	}
	e.must(e.s.DeleteUserKeepingAdmin(e.ctx, plain))
	wantKind(t, "deleting a deleted user", e.s.DeleteUserKeepingAdmin(e.ctx, plain), errs.NotFound)
	other, err := e.s.CreateUser(e.ctx, "other", "h", true, 0)
	e.must(err)
	e.must(e.s.DeleteUserKeepingAdmin(e.ctx, root.ID))
	wantKind(t, "deleting the new last admin", e.s.DeleteUserKeepingAdmin(e.ctx, other.ID), errs.Conflict)
}
