package quota_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/internal/testutil"
	"netdisk/meta"
	"netdisk/quota"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	delay = 5 * time.Second
	lease = 30 * time.Second
)

// hookSink is the real SQLite sink with a hook around Flush for fault tests.
type hookSink struct {
	*quota.SQLiteSink
	mu     sync.Mutex
	before func(fs []quota.Flush) error // runs before the real flush; an error aborts it
	after  func(fs []quota.Flush) error // runs after a committed flush; an error is returned
	seen   []quota.Flush                // every flush handed to the sink
}

func (s *hookSink) Flush(ctx context.Context, fs []quota.Flush) error {
	s.mu.Lock()
	s.seen = append(s.seen, fs...)
	before, after := s.before, s.after
	s.mu.Unlock()
	if before != nil {
		if err := before(fs); err != nil {
			return err
		}
	}
	if err := s.SQLiteSink.Flush(ctx, fs); err != nil {
		return err
	}
	if after != nil {
		return after(fs)
	}
	return nil
}

func (s *hookSink) hooks(before, after func([]quota.Flush) error) {
	s.mu.Lock()
	s.before, s.after = before, after
	s.mu.Unlock()
}

// env is one ledger over a real SQLite database, with a session table that
// plays the upload package's part (the truth), used the way the package doc
// says the upload service must use the ledger.
type env struct {
	t     *testing.T
	ctx   context.Context
	db    *meta.SQLite
	sink  *hookSink
	clock *testutil.Clock
	l     quota.Ledger
	kind  string
	redis *testutil.Redis
	// newLedger makes another ledger on the same state (for Redis: the same
	// server, as a second daemon would; for memory: a fresh process).
	newLedger func() quota.Ledger
	// peer returns the ledger of a second daemon sharing the state (Redis),
	// or the same ledger when there can be only one (embedded).
	peer func() quota.Ledger
	// lose loses the ledger's state: FLUSHALL for Redis, a restarted
	// process for the embedded ledger.
	lose func()
}

type impl struct {
	name  string
	setup func(e *env)
}

var impls = []impl{
	{"memory", func(e *env) {
		e.newLedger = func() quota.Ledger { return quota.NewMemory(e.cfg()) }
		e.lose = func() { e.l = e.newLedger() }
		e.peer = func() quota.Ledger { return e.l }
	}},
	{"redis", func(e *env) {
		e.redis = testutil.StartRedis(e.t)
		c := e.redis.Client()
		e.newLedger = func() quota.Ledger { return quota.NewRedis(c, "", e.cfg()) }
		e.lose = func() { e.redis.FlushAll() }
		e.peer = e.newLedger
	}},
}

func (e *env) cfg() quota.Config {
	return quota.Config{Sink: e.sink, Clock: e.clock, Delay: delay, Lease: lease, Batch: 7}
}

func newEnv(t *testing.T, im impl) *env {
	t.Helper()
	ctx := context.Background()
	clock := testutil.NewClock(t0)
	db, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.DB().ExecContext(ctx, `CREATE TABLE test_sessions (upload TEXT PRIMARY KEY, user_id INTEGER NOT NULL,
		declared INTEGER NOT NULL, received INTEGER NOT NULL, have TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, db: db, clock: clock, kind: im.name,
		sink: &hookSink{SQLiteSink: quota.NewSQLiteSink(db, clock.Now)}}
	im.setup(e)
	e.l = e.newLedger()
	e.must(e.l.Reconcile(ctx, e))
	return e
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) user(name string, total int64) int64 {
	e.t.Helper()
	u, err := e.db.CreateUser(e.ctx, name, "x", false, total)
	e.must(err)
	return u.ID
}

// annReceived20 is the start of the flush scenarios: the user ann (quota
// 1000) with the session up(1) of 50 bytes, which received chunk 0 (20
// bytes) not yet flushed. It returns ann's id.
func (e *env) annReceived20() int64 {
	e.t.Helper()
	u := e.user("ann", 1000)
	e.must(e.initSession(u, up(1), 50))
	e.must(e.chunk(u, up(1), 0, 20))
	return u
}

// OpenSessions implements quota.Truth from the session table.
func (e *env) OpenSessions(ctx context.Context) ([]quota.Session, error) {
	rows, err := e.db.ReadDB().QueryContext(ctx, `SELECT upload, user_id, declared, received, have FROM test_sessions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []quota.Session
	for rows.Next() {
		var s quota.Session
		var have string
		if err := rows.Scan(&s.Upload, &s.User, &s.Declared, &s.Received, &have); err != nil {
			return nil, err
		}
		s.Have = parseHave(have)
		out = append(out, s)
	}
	return out, rows.Err()
}

func parseHave(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f != "" {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

// ---- the upload service's side, as the package doc prescribes

func (e *env) initSession(user int64, upload string, declared int64) error {
	if _, err := e.l.Reserve(e.ctx, user, upload, declared); err != nil {
		return err
	}
	_, err := e.db.DB().ExecContext(e.ctx, `INSERT OR IGNORE INTO test_sessions VALUES (?, ?, ?, 0, '')`, upload, user, declared)
	return err
}

func (e *env) chunk(user int64, upload string, idx int, n int64) error {
	if err := e.l.Chunk(e.ctx, user, upload, idx, n); err != nil {
		return err
	}
	return e.db.Tx(e.ctx, func(tx *sql.Tx) error {
		var have string
		if err := tx.QueryRowContext(e.ctx, `SELECT have FROM test_sessions WHERE upload = ?`, upload).Scan(&have); err != nil {
			return err
		}
		if slices.Contains(parseHave(have), idx) {
			return nil
		}
		_, err := tx.ExecContext(e.ctx, `UPDATE test_sessions SET received = received + ?, have = have || ? || ',' WHERE upload = ?`, n, idx, upload)
		return err
	})
}

// finish ends a session: merge when size >= 0, else abort/expire. It returns
// what Settle subtracted and what the ledger released.
func (e *env) finish(user int64, upload string, size int64) (int64, quota.Released, error) {
	var settled int64
	err := e.db.Tx(e.ctx, func(tx *sql.Tx) error {
		var err error
		if size >= 0 {
			if _, err = tx.ExecContext(e.ctx, `UPDATE users SET use_space_finished = use_space_finished + ? WHERE id = ?`, size, user); err != nil {
				return err
			}
		}
		if settled, err = e.sink.Settle(e.ctx, tx, user, upload); err != nil {
			return err
		}
		_, err = tx.ExecContext(e.ctx, `DELETE FROM test_sessions WHERE upload = ?`, upload)
		return err
	})
	if err != nil {
		return 0, quota.Released{}, err
	}
	var rel quota.Released
	if size >= 0 {
		rel, err = e.l.Commit(e.ctx, user, upload, size)
	} else {
		rel, err = e.l.Release(e.ctx, user, upload)
	}
	return settled, rel, err
}

func (e *env) deleteFile(user int64, n int64) error {
	if _, err := e.db.DB().ExecContext(e.ctx, `UPDATE users SET use_space_finished = use_space_finished - ? WHERE id = ?`, n, user); err != nil {
		return err
	}
	return e.l.AddFinished(e.ctx, user, -n)
}

// ---- observations

func (e *env) usage(user int64) quota.Usage {
	e.t.Helper()
	u, err := e.l.Usage(e.ctx, user)
	e.must(err)
	return u
}

func (e *env) sqlUser(user int64) meta.User {
	e.t.Helper()
	u, err := e.db.UserByID(e.ctx, user)
	e.must(err)
	return u
}

// drain runs every pending flush: the clock passes the delay and any lease.
func (e *env) drain() {
	e.t.Helper()
	e.clock.Advance(lease + delay)
	_, err := e.l.ScanDue(e.ctx, e.clock.Now())
	e.must(err)
}

func wantKind(t *testing.T, err error, k errs.Kind) {
	t.Helper()
	if !errs.Is(err, k) {
		t.Fatalf("error = %v (kind %v), want kind %v", err, errs.KindOf(err), k)
	}
}

func wantLost(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, quota.ErrStateLost) || !errs.Is(err, errs.Unavailable) {
		t.Fatalf("error = %v, want ErrStateLost with kind Unavailable", err)
	}
}

func forEachImpl(t *testing.T, f func(t *testing.T, e *env)) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) { f(t, newEnv(t, im)) })
	}
}

func up(i int) string { return fmt.Sprintf("up-%d", i) }
