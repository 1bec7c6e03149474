package metatest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"netdisk/errs"
	"netdisk/meta"
)

// groupTx is the optional group commit the drive finds by type assertion:
// concurrent transactions sharing one commit.
type groupTx interface {
	GroupTx(ctx context.Context, fn func(*meta.Tx) error) error
}

// testGroupTx holds a store's group commit to Tx's contract for each
// member: concurrent members all commit, each exactly once; a member whose
// fn fails is rolled back alone; sharing needs a context that cannot be
// cancelled (a cancellable one is Invalid and runs nothing).
func testGroupTx(t *testing.T, e *env) {
	g, ok := e.s.(groupTx)
	if !ok {
		t.Skip("the store has no group commit")
	}
	a := e.user("alice", 0)
	ctx := context.WithoutCancel(e.ctx)
	mkdir := func(p string) func(*meta.Tx) error {
		return func(tx *meta.Tx) error {
			_, _, err := e.s.MkdirTx(ctx, tx, a, p, t0, 0, meta.NoGrowthLimit)
			return err
		}
	}
	boom := errors.New("boom")
	const members = 16
	start := make(chan struct{})
	results := make([]error, members)
	var wg sync.WaitGroup
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn := mkdir(fmt.Sprintf("/d%02d", i))
			if i == 5 {
				inner := fn
				fn = func(tx *meta.Tx) error {
					if err := inner(tx); err != nil {
						return err
					}
					return boom // its folder must not commit
				}
			}
			results[i] = g.GroupTx(ctx, fn)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range results {
		want := i != 5
		if (err == nil) != want || (!want && !errors.Is(err, boom)) {
			t.Fatalf("member %d: %v", i, err)
		}
		_, serr := e.s.Stat(e.ctx, a, fmt.Sprintf("/d%02d", i))
		if (serr == nil) != want {
			t.Fatalf("member %d committed: %v, want %v", i, serr == nil, want)
		}
	}
	// A member's own failure is its error, classified as Tx's.
	wantKind(t, "a taken path in a group", g.GroupTx(ctx, mkdir("/d00")), errs.Exists)
	cctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	wantKind(t, "GroupTx with a cancellable context", g.GroupTx(cctx, mkdir("/alone")), errs.Invalid)
	if _, err := e.s.Stat(e.ctx, a, "/alone"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a refused GroupTx committed: %v", err)
	}
}
