package meta

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"netdisk/errs"
	"netdisk/testutil"
)

// TestGroupCommit: callers arriving while a batch commits share the next
// transaction (one commit for all of them); a member whose fn fails is
// rolled back alone; every member learns its outcome only after the commit.
func TestGroupCommit(t *testing.T) {
	testGroupCommit(t, openTestStore(t))
}

// The same on PostgreSQL, where a failed statement aborts the transaction
// until the member's savepoint is rolled back to.
func TestPostgresGroupCommit(t *testing.T) {
	testGroupCommit(t, openPostgresTestStore(t))
}

// openPostgresTestStore is openTestStore on a fresh database of the shared
// test cluster: the PostgreSQL store is the SQLite store's methods.
func openPostgresTestStore(t *testing.T) *SQLStore {
	t.Helper()
	p, err := OpenPostgres(context.Background(), testutil.SharedPostgres(t).NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.SQLStore
}

func testGroupCommit(t *testing.T, s *SQLStore) {
	ctx := context.WithoutCancel(context.Background())
	u, err := s.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	mkdir := func(p string) func(tx *Tx) error {
		return func(tx *Tx) error {
			_, err := tx.tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (?,?,'/',?,1,0)`, u.ID, p, p[1:])
			return err
		}
	}
	// The first caller leads; its fn blocks until five more have queued.
	release := make(chan struct{})
	entered := make(chan struct{})
	var wg sync.WaitGroup
	results := make([]error, 6)
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[0] = s.GroupTx(ctx, func(tx *Tx) error {
			close(entered)
			<-release
			return mkdir("/d0")(tx)
		})
	}()
	<-entered
	before := WriteTxCount()
	boom := errors.New("boom")
	queued := func() int {
		s.group.mu.Lock()
		defer s.group.mu.Unlock()
		return len(s.group.queue)
	}
	// Members queue one after another, so the batch runs them in order:
	// member 4's statement fails (a path member 0 committed), and member 5,
	// after it, still commits.
	for i := 1; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn := mkdir(fmt.Sprintf("/d%d", i))
			if i == 4 {
				fn = mkdir("/d0")
			}
			if i == 3 {
				fn = func(tx *Tx) error {
					if err := mkdir("/d3")(tx); err != nil {
						return err
					}
					return boom // its insert must not survive
				}
			}
			results[i] = s.GroupTx(ctx, fn)
		}()
		for queued() < i {
			runtime.Gosched() // waiting for the queue to fill, not timing a result
		}
	}
	close(release)
	wg.Wait()
	if got := WriteTxCount() - before; got != 1 {
		t.Fatalf("five queued callers took %d transactions, want 1", got)
	}
	for i, err := range results {
		want := i != 3 && i != 4
		if (err == nil) != want || (i == 3 && !errors.Is(err, boom)) {
			t.Fatalf("member %d: %v", i, err)
		}
		_, serr := s.Stat(ctx, u.ID, fmt.Sprintf("/d%d", i))
		if (serr == nil) != want {
			t.Fatalf("member %d committed %v (stat: %v)", i, want, serr)
		}
	}
	// A cancellable context is refused, not silently given a transaction
	// of its own (a statement it interrupts could roll the shared
	// transaction back): sharing is the caller's explicit choice.
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.GroupTx(cctx, mkdir("/alone")); !errs.Is(err, errs.Invalid) {
		t.Fatalf("GroupTx with a cancellable context: %v, want Invalid", err)
	}
	if _, err := s.Stat(ctx, u.ID, "/alone"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("/alone after a refused GroupTx: %v, want NotFound", err)
	}
	// A failing statement is that member's error.
	if err := s.GroupTx(ctx, mkdir("/d1")); err == nil {
		t.Fatal("a duplicate path committed")
	}
}

// TestGroupCommitMany: many concurrent callers all commit, each exactly once,
// whatever batches they fall into.
func TestGroupCommitMany(t *testing.T) {
	testGroupCommitMany(t, openTestStore(t))
}

func TestPostgresGroupCommitMany(t *testing.T) {
	testGroupCommitMany(t, openPostgresTestStore(t))
}

func testGroupCommitMany(t *testing.T, s *SQLStore) {
	ctx := context.WithoutCancel(context.Background())
	u, err := s.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 400)
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				p := fmt.Sprintf("/w%d-%d", w, i)
				errc <- s.GroupTx(ctx, func(tx *Tx) error {
					_, err := tx.tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (?,?,'/',?,1,0)`, u.ID, p, p[1:])
					return err
				})
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	ns, err := s.List(ctx, u.ID, "/")
	if err != nil || len(ns) != 400 {
		t.Fatalf("%d entries, %v; want 400", len(ns), err)
	}
}
