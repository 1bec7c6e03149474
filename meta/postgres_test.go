package meta_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/meta/metatest"
	"netdisk/testutil"
)

// One PostgreSQL cluster serves the package's tests; each store gets its own
// database.
func TestMain(m *testing.M) { testutil.Main(m) }

// The PostgreSQL store passes the conformance suite on a real server.
func TestPostgresConformance(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	metatest.Run(t, func(t *testing.T, now func() time.Time) meta.Store {
		s, err := meta.OpenPostgres(context.Background(), pg.NewDatabase(t), now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Two nodes on one PostgreSQL database keep the rules that span nodes.
func TestPostgresShared(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	metatest.RunShared(t, func(t *testing.T, now func() time.Time) (meta.Store, meta.Store) {
		url := pg.NewDatabase(t)
		return openPair(t, func() (meta.Store, error) { return meta.OpenPostgres(context.Background(), url, now) })
	})
}

// Nodes starting together against a fresh database migrate it once: every
// open succeeds, each migration is recorded exactly once, and what one node
// writes the others read.
func TestPostgresConcurrentOpensMigrateOnce(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	url := pg.NewDatabase(t)
	const nodes = 6
	type opened struct {
		s   *meta.Postgres
		err error
	}
	results := make(chan opened, nodes)
	for range nodes {
		go func() {
			s, err := meta.OpenPostgres(context.Background(), url, nil)
			results <- opened{s, err}
		}()
	}
	var stores []*meta.Postgres
	for range nodes {
		r := <-results
		if r.err != nil {
			t.Fatalf("open: %v", r.err)
		}
		stores = append(stores, r.s)
		t.Cleanup(func() { r.s.Close() })
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var rows, distinct int
	if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT name) FROM schema_migrations`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows == 0 || rows != distinct {
		t.Fatalf("schema_migrations holds %d rows for %d migrations, want one row each", rows, distinct)
	}
	u, err := stores[0].CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stores[nodes-1].UserByName(ctx, "ALICE")
	if err != nil || got.ID != u.ID {
		t.Fatalf("user through another node: %+v, %v", got, err)
	}
}

// Two nodes committing files for one user at once never take the user past
// their quota, and the finished bytes stay exact.
func TestPostgresQuotaAcrossNodes(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	url := pg.NewDatabase(t)
	ctx := context.Background()
	var nodes [2]*meta.Postgres
	for i := range nodes {
		s, err := meta.OpenPostgres(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		nodes[i] = s
	}
	// Room for ten 1-byte files with their entries (meta/charge.go).
	u, err := nodes[0].CreateUser(ctx, "bob", "h", false, 10*(1+meta.EntryCharge("f00")))
	if err != nil {
		t.Fatal(err)
	}
	const tries = 24
	errc := make(chan error, tries)
	for i := range tries {
		go func() {
			_, err := nodes[i%2].CommitFile(ctx, u.ID, fmt.Sprintf("/f%02d", i), meta.NewFile{
				Size: 1, FileHash: "h", ModTime: time.Unix(1, 0),
				Chunks: []meta.Chunk{{SHA256: fmt.Sprintf("%064d", i), MD5: "m", Size: 1}},
			})
			errc <- err
		}()
	}
	ok := 0
	for range tries {
		err := <-errc
		switch {
		case err == nil:
			ok++
		case !errs.Is(err, errs.Quota):
			t.Fatalf("commit: %v", err)
		}
	}
	got, err := nodes[1].UserByID(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok != 10 || got.Finished != 10 {
		t.Fatalf("%d commits succeeded, finished = %d; want 10 and 10 (quota: 10 files of 1 byte)", ok, got.Finished)
	}
}

// The PostgreSQL store keeps the async records' contract too (migration 003).
func TestPostgresAsyncConformance(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	metatest.RunAsync(t, func(t *testing.T) meta.AsyncJobs {
		s, err := meta.OpenPostgres(context.Background(), pg.NewDatabase(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// Content stored before migration 002 (instant upload's draws) gets its
// draws while the migration applies, and they stay what they were across
// restarts, as on SQLite (TestDrawsBackfilledAndStableAcrossRestarts).
func TestPostgresDrawsBackfilledAndStable(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	url := pg.NewDatabase(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(q string) {
		t.Helper()
		// The simple protocol runs a file of several statements at once.
		if _, err := c.Exec(ctx, q, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	init, err := os.ReadFile("pgmigrations/001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	// A database as the version before the draws left it.
	mustExec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_ns BIGINT NOT NULL)`)
	mustExec(string(init))
	mustExec(`INSERT INTO schema_migrations(name, applied_ns) VALUES ('pgmigrations/001_init.sql', 1)`)
	mustExec(`INSERT INTO users(id, name, pass_hash, created_ns) VALUES (1, 'alice', 'h', 1)`)
	mustExec(`INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (1, '/', '', '', 1, 1)`)
	mustExec(`INSERT INTO nodes(id, user_id, path, parent, name, is_dir, size, mtime_ns, file_hash) VALUES (10, 1, '/f', '/', 'f', 0, 3, 1, 'fh')`)
	mustExec(`INSERT INTO chunks(id, sha256, md5, size, created_ns) VALUES (20, 's1', 'm1', 3, 1)`)
	mustExec(`INSERT INTO file_chunks(node_id, idx, chunk_id) VALUES (10, 0, 20)`)
	c.Close(ctx)

	draws := func() (chunk, file int64) {
		t.Helper()
		s, err := meta.OpenPostgres(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hs, err := s.ChunksHeld(ctx, 2, "m1", 3, 10)
		if err != nil || len(hs) != 1 || hs[0].Owners != 1 || hs[0].Own {
			t.Fatalf("ChunksHeld = %+v %v", hs, err)
		}
		_, h, found, err := s.FileHeld(ctx, 2, "fh", 3, 10)
		if err != nil || !found || h.Owners != 1 || h.Own {
			t.Fatalf("FileHeld = %+v %v %v", h, found, err)
		}
		return hs[0].Draw, h.Draw
	}
	c1, f1 := draws()
	if c1 == meta.NoDraw || f1 == meta.NoDraw || c1 < 0 || f1 < 0 || c1 >= meta.DrawRange || f1 >= meta.DrawRange {
		t.Fatalf("backfilled draws %d %d", c1, f1)
	}
	if c2, f2 := draws(); c2 != c1 || f2 != f1 {
		t.Fatalf("draws changed across a restart: %d %d, then %d %d", c1, f1, c2, f2)
	}
}

// A copy into PostgreSQL goes on giving ids after every id the SQLite store
// ever gave, deleted users' included: a user deleted before the migration
// never has their id given to a new one after it.
func TestCopyToNeverReusesUserIDs(t *testing.T) {
	ctx := context.Background()
	src, err := meta.OpenSQLite(ctx, t.TempDir()+"/meta.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.CreateUser(ctx, "alice", "h", false, 0); err != nil {
		t.Fatal(err)
	}
	bob, err := src.CreateUser(ctx, "bob", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.DeleteUser(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	dst, err := meta.OpenPostgres(ctx, testutil.SharedPostgres(t).NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := src.CopyTo(ctx, dst); err != nil {
		t.Fatal(err)
	}
	carol, err := dst.CreateUser(ctx, "carol", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if carol.ID <= bob.ID {
		t.Fatalf("carol got id %d, not after deleted bob's %d", carol.ID, bob.ID)
	}
}

// A copy into PostgreSQL keeps the trash: its items (ids, paths, what they
// were charged) beside their hidden nodes, so that every item restores on
// the new store and fsck finds no node without its item.
func TestCopyToKeepsTheTrash(t *testing.T) {
	ctx := context.Background()
	src, err := meta.OpenSQLite(ctx, t.TempDir()+"/meta.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	u, err := src.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Mkdir(ctx, u.ID, "/d", time.Now()); err != nil {
		t.Fatal(err)
	}
	c := meta.Chunk{SHA256: "sha-f", MD5: "md5-f", Size: 3, Data: []byte("abc")}
	if _, err := src.CommitFile(ctx, u.ID, "/d/f", meta.NewFile{Size: 3, FileHash: "h-f", ModTime: time.Now(), Chunks: []meta.Chunk{c}}); err != nil {
		t.Fatal(err)
	}
	if err := src.Remove(ctx, u.ID, "/d"); err != nil {
		t.Fatal(err)
	}
	its, err := src.ListTrash(ctx, u.ID, 0, 10)
	if err != nil || len(its) != 1 {
		t.Fatalf("source trash: %+v %v", its, err)
	}
	cost, err := src.TrashCost(ctx, u.ID, its[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := meta.OpenPostgres(ctx, testutil.SharedPostgres(t).NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := src.CopyTo(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if lost, err := dst.CheckTrash(ctx); err != nil || len(lost) != 0 {
		t.Fatalf("the copy's trash: %q, %v", lost, err)
	}
	got, err := dst.ListTrash(ctx, u.ID, 0, 10)
	if err != nil || len(got) != 1 || got[0].ID != its[0].ID || got[0].Path != "/d" || got[0].Size != 3 {
		t.Fatalf("the copy's trash: %+v %v, want %+v", got, err, its)
	}
	if c, err := dst.TrashCost(ctx, u.ID, its[0].ID); err != nil || c != cost {
		t.Fatalf("the copy's TrashCost = %d, %v; want %d", c, err, cost)
	}
	err = dst.Tx(ctx, func(tx *meta.Tx) error {
		_, _, err := dst.RestoreTrashTx(ctx, tx, u.ID, its[0].ID, meta.NoGrowthLimit)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := dst.Stat(ctx, u.ID, "/d/f"); err != nil || n.Size != 3 {
		t.Fatalf("/d/f restored on the copy: %+v %v", n, err)
	}
}

// A PostgreSQL restart is the database being away, not a failure of the
// request: a query cut by the shutdown (FATAL 57P01), the refused
// connections while it is down and the dead pooled connections after it all
// fail as errs.Unavailable (503), and no message carries the server's text
// or address; once it is back, the same store answers again.
func TestPostgresRestartIsUnavailable(t *testing.T) {
	ctx := context.Background()
	pg := testutil.StartPostgres(t)
	url := pg.NewDatabase(t)
	s, err := meta.OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateUser(ctx, "ann", "hash", false, 0); err != nil {
		t.Fatal(err)
	}
	// Hold the users table, so the store's next read waits in the server
	// until the shutdown ends it.
	side, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Close(context.Background())
	if _, err := side.Exec(ctx, "BEGIN; LOCK TABLE users IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	// Another connection, outside that transaction, watches for the
	// store's read to wait on the lock.
	watch, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	cut := make(chan error, 1)
	go func() {
		_, err := s.UserByName(ctx, "ann")
		cut <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for waiting := 0; waiting == 0; {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := watch.QueryRow(qctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&waiting)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the store's read never waited on the lock")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	pg.Down()
	check := func(what string, err error) {
		t.Helper()
		if !errs.Is(err, errs.Unavailable) {
			t.Errorf("%s: %v (kind %v); want unavailable", what, err, errs.KindOf(err))
		}
		m := errs.Message(err)
		for _, s := range []string{"FATAL", "SQLSTATE", "57P01", "terminating", "127.0.0.1", pg.Addr, "dial", "connect"} {
			if strings.Contains(m, s) {
				t.Errorf("%s: message %q carries the database's text (%q)", what, m, s)
			}
		}
	}
	select {
	case err := <-cut:
		check("a read cut by the shutdown", err)
	case <-time.After(time.Minute):
		t.Fatal("the read waiting in the server did not end with its shutdown")
	}
	_, err = s.UserByName(ctx, "ann")
	check("a read while the server is down", err)
	_, err = s.CreateUser(ctx, "bob", "hash", false, 0)
	check("a write while the server is down", err)
	pg.Up(t)
	for attempt := 0; ; attempt++ {
		_, err := s.UserByName(ctx, "ann")
		if err == nil {
			break
		}
		check("a read after the restart", err)
		if attempt == 5 {
			t.Fatalf("the store still fails after the restart: %v", err)
		}
	}
}

// A look-up waiting on the PostgreSQL server ends when its context is
// cancelled: on PostgreSQL every query is a round trip that can wait (here
// on a table lock another session holds), so none drops its cancellation.
func TestPostgresPointQueryCancels(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	url := pg.NewDatabase(t)
	ctx := context.Background()
	s, err := meta.OpenPostgres(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	u, err := s.CreateUser(ctx, "carol", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	ltx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ltx.Rollback(ctx)
	if _, err := ltx.Exec(ctx, `LOCK TABLE nodes IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, _, _, _, err := s.StatWithParent(qctx, u.ID, "/a/b")
		done <- err
	}()
	// Wait until the look-up is queued behind the lock in the server (it may
	// wait while its statement is parsed, before its text shows). A session
	// of its own watches: inside a transaction pg_stat_activity is frozen at
	// its first read.
	watch, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the look-up never reached the server's lock queue")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled look-up: %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		// Release the lock so the look-up can end, then report it.
		ltx.Rollback(ctx)
		t.Fatalf("a cancelled look-up still waited on the server (then returned %v)", <-done)
	}
}
