package quota_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/testutil"
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

// env is one ledger over a real SQLite database whose upload sessions
// (meta.Sessions) play the upload package's part (the truth), used the way
// the package doc says the upload service must use the ledger. A session
// uploads to "/<id>"; its chunk at index i is a record of its own.
type env struct {
	t     *testing.T
	ctx   context.Context
	db    *meta.SQLStore
	raw   *sql.DB // the same database file, for a change the store's contract does not make (uncharge)
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
	// hidden sessions are left out of the truth, as if their rows were gone
	// without a settlement (a crash of an old binary).
	hidden sync.Map
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
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := meta.OpenSQLite(ctx, path, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	raw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	e := &env{t: t, ctx: ctx, db: db, raw: raw, clock: clock, kind: im.name,
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

// holdMinute holds n bytes for upload with a lease of a minute from now
// (or renews the hold).
func (e *env) holdMinute(user int64, upload string, n int64) {
	e.t.Helper()
	_, err := e.l.Hold(e.ctx, user, upload, n, e.clock.Now().Add(time.Minute))
	e.must(err)
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

// OpenSessions implements quota.Truth from the store's open sessions.
func (e *env) OpenSessions(ctx context.Context) ([]quota.Session, error) {
	open, err := e.db.OpenSessions(ctx)
	if err != nil {
		return nil, err
	}
	var out []quota.Session
	for _, o := range open {
		if _, hidden := e.hidden.Load(o.ID); hidden {
			continue
		}
		s := quota.Session{User: o.UserID, Upload: o.ID, Declared: o.Size, Received: o.Received}
		for _, i := range o.Held {
			s.Have = append(s.Have, int(i))
		}
		out = append(out, s)
	}
	return out, nil
}

// ---- the upload service's side, as the package doc prescribes

func (e *env) initSession(user int64, upload string, declared int64) error {
	if _, err := e.l.Reserve(e.ctx, user, upload, declared); err != nil {
		return err
	}
	// Reserving the same upload again resumes its session.
	_, err := e.db.CreateSession(e.ctx, meta.Session{ID: upload, UserID: user, Path: "/" + upload, Size: declared, ChunkSize: 1},
		time.Unix(0, 0), e.clock.Now())
	return err
}

func (e *env) chunk(user int64, upload string, idx int, n int64) error {
	if err := e.l.Chunk(e.ctx, user, upload, idx, n); err != nil {
		return err
	}
	c := meta.Chunk{SHA256: fmt.Sprintf("%s/%d", upload, idx), MD5: "-", Size: n}
	return e.db.AddSessionChunk(e.ctx, upload, int64(idx), c, e.clock.Now())
}

// finish ends a session: merge of a file of size bytes when size >= 0, else
// abort/expire; the store settles in the same transaction. It returns what
// the settlement subtracted (the drop of the user's unfinished bytes: only
// meaningful while nothing else of the user changes) and what the ledger
// released.
func (e *env) finish(user int64, upload string, size int64) (int64, quota.Released, error) {
	before, err := e.db.UserByID(e.ctx, user)
	if err != nil {
		return 0, quota.Released{}, err
	}
	if size >= 0 {
		_, _, _, err = e.db.MergeSession(e.ctx, upload, meta.NewFile{Size: size, ModTime: e.clock.Now()}, "", e.clock.Now())
		if err == nil {
			err = e.uncharge()
		}
	} else {
		_, _, err = e.db.DropSession(e.ctx, upload, e.clock.Now())
	}
	if err != nil {
		return 0, quota.Released{}, err
	}
	after, err := e.db.UserByID(e.ctx, user)
	if err != nil {
		return 0, quota.Released{}, err
	}
	var rel quota.Released
	if size >= 0 {
		rel, err = e.l.Commit(e.ctx, user, upload, size)
	} else {
		rel, err = e.l.Release(e.ctx, user, upload)
	}
	return before.Unfinished - after.Unfinished, rel, err
}

// uncharge forgets what the store charged for the entries of the files these
// tests make (meta/charge.go): they play the drive's part with file bytes
// alone, so the ledger's arithmetic is tested by itself; reserving and
// reporting the entries' charge is the drive's (drive.CommitSession),
// tested there and in package api's quota tests on both ledgers.
func (e *env) uncharge() error {
	_, err := e.raw.ExecContext(e.ctx, `UPDATE users SET use_space_meta = 0`)
	return err
}

// deleteFile takes n bytes away from the user's files (shrinking them, in
// path order), then tells the ledger.
func (e *env) deleteFile(user int64, n int64) error {
	files, err := e.db.List(e.ctx, user, "/")
	if err != nil {
		return err
	}
	left := n
	for _, f := range files {
		if left == 0 {
			break
		}
		take := min(f.Size, left)
		if _, err := e.db.CommitFile(e.ctx, user, f.Path, meta.NewFile{Size: f.Size - take, ModTime: e.clock.Now()}); err != nil {
			return err
		}
		left -= take
	}
	if left != 0 {
		return fmt.Errorf("deleteFile: the user's files hold %d bytes less than %d", left, n)
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

func up(i int) string { return fmt.Sprintf("up-%d", i) }
