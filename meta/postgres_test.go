package meta_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"netdisk/errs"
	"netdisk/internal/testutil"
	"netdisk/meta"
	"netdisk/meta/metatest"
)

// One PostgreSQL cluster serves the package's tests; each store gets its own
// database.
func TestMain(m *testing.M) {
	code := m.Run()
	testutil.StopSharedPostgres()
	os.Exit(code)
}

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
	u, err := nodes[0].CreateUser(ctx, "bob", "h", false, 10)
	if err != nil {
		t.Fatal(err)
	}
	const tries = 24
	errc := make(chan error, tries)
	for i := range tries {
		go func() {
			_, err := nodes[i%2].CommitFile(ctx, u.ID, fmt.Sprintf("/f%d", i), meta.NewFile{
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
		t.Fatalf("%d commits succeeded, finished = %d; want 10 and 10 (quota 10 bytes)", ok, got.Finished)
	}
}
