package async_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/async"
	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/lock"
	"netdisk/meta"
	"netdisk/testutil"
)

// fixture is a real drive (SQLite + chunk dir) with one user and a service
// over it on a fake clock. Agents are driven through the service's agent
// API (Work, Report); the agent process is tested end to end in e2e.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	env   *drivetest.Env
	clock *testutil.Clock
	uid   int64
	svc   *async.Service
	store async.Store
	locks *lock.Manager
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newFixture(t *testing.T, open storeOpener) *fixture {
	// Real time as the start: Redis expires keys on its own clock.
	clock := testutil.NewClock(time.Now().Truncate(time.Second))
	env := drivetest.New(t, drivetest.Options{Clock: clock, ChunkSize: 1 << 10})
	u := env.AddUser(t, "alice", 0)
	f := &fixture{t: t, ctx: context.Background(), env: env, clock: clock, uid: u.ID, store: open(t, async.DefaultTTL)}
	f.locks = f.newLocks()
	f.svc = f.newService("d1", f.locks)
	return f
}

type storeOpener func(t *testing.T, ttl time.Duration) async.Store

func (f *fixture) newLocks() *lock.Manager {
	m, err := lock.NewManager(f.ctx, lock.Config{Now: f.clock.Now, Log: quiet})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(m.Close)
	return m
}

func (f *fixture) newService(node string, locks *lock.Manager) *async.Service {
	s, err := async.New(f.ctx, async.Config{Store: f.store, Files: f.env.Drive, Locks: locks, Node: node, Now: f.clock.Now, Log: quiet})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(s.Close)
	return s
}

func (f *fixture) put(p string, data []byte) {
	f.t.Helper()
	w, err := f.env.Drive.Create(f.ctx, f.uid, p, drive.WriteOptions{ExpectedSize: int64(len(data))})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		f.t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) add(p, agent string) async.Task {
	f.t.Helper()
	f.seen(agent)
	task, err := f.svc.Add(f.ctx, async.Request{User: f.uid, Path: p, Agent: agent, TargetDir: "in"})
	if err != nil {
		f.t.Fatal(err)
	}
	return task
}

// seen registers the agent as its work stream does.
func (f *fixture) seen(agent string) {
	f.t.Helper()
	if err := f.svc.Seen(f.ctx, f.uid, agent, ""); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) tick(s *async.Service) {
	f.t.Helper()
	if err := s.Tick(f.ctx); err != nil {
		f.t.Fatal(err)
	}
}

// endWindow lets the collection window pass and runs the scheduler's
// pass: the window's job starts.
func (f *fixture) endWindow() {
	f.t.Helper()
	f.clock.Advance(f.svc.Window())
	f.tick(f.svc)
}

func (f *fixture) status(id string) async.Status {
	f.t.Helper()
	st, err := f.svc.Status(f.ctx, f.uid, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.Status
}

// deliver plays agent: reads its work, fetches the pinned content as the
// content endpoint would, and reports.
func (f *fixture) deliver(agent string, ok bool) []string {
	f.t.Helper()
	ws, err := f.svc.Work(f.ctx, f.uid, agent, "")
	if err != nil {
		f.t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		j, err := f.svc.Content(f.ctx, f.uid, w.TaskID)
		if err != nil {
			f.t.Fatal(err)
		}
		r := f.env.Drive.OpenVersion(f.ctx, nodeOf(j), j.Chunks)
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			f.t.Fatal(err)
		}
		got = append(got, string(b))
		if err := f.svc.Report(f.ctx, f.uid, agent, "", w.TaskID, ok, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	return got
}

func both(t *testing.T, fn func(t *testing.T, f *fixture)) {
	t.Run("embedded", func(t *testing.T) { fn(t, newFixture(t, openEmbedded)) })
	t.Run("redis", func(t *testing.T) { fn(t, newFixture(t, openRedis)) })
}

// Tasks within one window share one job; the job starts only once the
// window has ended; every target succeeds; the next window is a new job.
func TestWindowsAndSuccess(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f.bin", []byte("version one"))
		// Start at the first second of a window.
		w := f.svc.Window()
		f.clock.Advance(w - time.Duration(f.clock.Now().Unix()%int64(w/time.Second))*time.Second)
		a := f.add("/f.bin", "a1")
		f.clock.Advance(w - time.Second) // last second of the window
		b := f.add("/f.bin", "a2")
		if a.JobID != b.JobID {
			t.Fatalf("two tasks of one window in jobs %s and %s", a.JobID, b.JobID)
		}
		f.tick(f.svc)
		if s := f.status(a.ID); s != async.Pending {
			t.Fatalf("before the window ends: %s, want Pending", s)
		}
		f.clock.Advance(time.Second) // the window's end: a new window
		c := f.add("/f.bin", "a1")
		if c.JobID == a.JobID {
			t.Fatal("a task of the next window joined the old job")
		}
		if bk, _ := async.BucketOf(c.JobID); bk != async.Bucket(f.clock.Now(), w) {
			t.Fatalf("job %s, want bucket %d", c.JobID, async.Bucket(f.clock.Now(), w))
		}
		f.clock.Advance(time.Nanosecond)
		f.tick(f.svc)
		if s := f.status(a.ID); s != async.Running {
			t.Fatalf("after the window: %s, want Running", s)
		}
		if s := f.status(c.ID); s != async.Pending {
			t.Fatalf("next window's task: %s, want Pending", s)
		}
		// The file changes after the job pinned it: targets get the pinned bytes.
		f.put("/f.bin", []byte("version two, longer"))
		got := append(f.deliver("a1", true), f.deliver("a2", true)...)
		if len(got) != 2 || got[0] != "version one" || got[1] != "version one" {
			t.Fatalf("delivered %q, want the pinned version twice", got)
		}
		f.tick(f.svc)
		for _, id := range []string{a.ID, b.ID} {
			if s := f.status(id); s != async.Success {
				t.Fatalf("task %s: %s, want Success", id, s)
			}
		}
		if j, _ := f.svc.Job(f.ctx, a.JobID); j.Status != async.Success {
			t.Fatalf("job %s", j.Status)
		}
		// The second job runs the new version.
		f.clock.Advance(w)
		f.tick(f.svc)
		if got := f.deliver("a1", true); len(got) != 1 || got[0] != "version two, longer" {
			t.Fatalf("second job delivered %q", got)
		}
	})
}

// One target failing and one never answering (its agent crashed mid-way)
// do not touch the others: Failed and Timeout for them, Success for the rest.
func TestFailureAndTimeoutAreIsolated(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		ok, bad, crash := f.add("/f", "ok"), f.add("/f", "bad"), f.add("/f", "crash")
		f.endWindow()
		f.deliver("ok", true)
		f.deliver("bad", false)
		// crash took its work and died.
		if ws, _ := f.svc.Work(f.ctx, f.uid, "crash", ""); len(ws) != 1 {
			t.Fatalf("crash's work %v", ws)
		}
		f.clock.Advance(async.DefaultTimeout - time.Second)
		f.tick(f.svc)
		if j, _ := f.svc.Job(f.ctx, ok.JobID); j.Status != async.Running {
			t.Fatalf("job before its timeout: %s", j.Status)
		}
		f.clock.Advance(time.Second)
		f.tick(f.svc)
		want := map[string]async.Status{ok.ID: async.Success, bad.ID: async.Failed, crash.ID: async.Timeout}
		for id, st := range want {
			if got := f.status(id); got != st {
				t.Errorf("task %s: %s, want %s", id, got, st)
			}
		}
		if j, _ := f.svc.Job(f.ctx, ok.JobID); j.Status != async.Timeout {
			t.Fatalf("job: %s, want Timeout", j.Status)
		}
		// A late answer changes nothing.
		f.svc.Report(f.ctx, f.uid, "crash", "", crash.ID, true, "")
		if got := f.status(crash.ID); got != async.Timeout {
			t.Fatalf("late answer turned Timeout into %s", got)
		}
	})
}

func TestAllFailedEndsFailedBeforeTimeout(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		a, _ := f.add("/f", "a"), f.add("/f", "b")
		f.endWindow()
		f.deliver("a", true)
		f.deliver("b", false)
		f.tick(f.svc)
		if j, _ := f.svc.Job(f.ctx, a.JobID); j.Status != async.Failed {
			t.Fatalf("job: %s, want Failed", j.Status)
		}
	})
}

// A daemon that stops mid-job (its service closed, its locks gone with it)
// is replaced by another on the same store: the job resumes and ends; two
// live daemons never both run one job.
func TestRestartAndTwoDaemons(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("payload"))
		a, b := f.add("/f", "a"), f.add("/f", "b")
		// A second daemon on the same store and lock state.
		other := f.newService("d2", f.locks)
		f.endWindow()
		f.tick(other) // d1 holds the job: d2 does nothing to it
		if ws, _ := f.svc.Work(f.ctx, f.uid, "a", ""); len(ws) != 1 {
			t.Fatalf("work handed %d times, want once", len(ws))
		}
		f.deliver("a", true)
		// d1 dies: its lease runs out; a restarted daemon (new service,
		// same store) takes the job over and finishes it.
		f.svc.Close()
		f.clock.Advance(lock.DefaultLease + time.Second)
		if err := f.locks.Expire(f.ctx); err != nil {
			t.Fatal(err)
		}
		restarted := f.newService("d1-restarted", f.locks)
		f.tick(restarted)
		if s := f.status(b.ID); s != async.Running {
			t.Fatalf("b after restart: %s", s)
		}
		f.deliver("b", true)
		f.tick(restarted)
		for _, id := range []string{a.ID, b.ID} {
			if s := f.status(id); s != async.Success {
				t.Fatalf("task %s: %s", id, s)
			}
		}
	})
}

func TestUnknownPathAndIsolation(t *testing.T) {
	f := newFixture(t, openEmbedded)
	f.put("/f", []byte("x"))
	f.seen("a")
	if _, err := f.svc.Add(f.ctx, async.Request{User: f.uid, Path: "/missing", Agent: "a"}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown path: %v, want NotFound", err)
	}
	for _, dir := range []string{"../x", "a/../../b", "a/./b"} {
		if _, err := f.svc.Add(f.ctx, async.Request{User: f.uid, Path: "/f", Agent: "a", TargetDir: dir}); !errs.Is(err, errs.Invalid) {
			t.Fatalf("target dir %q: %v, want Invalid", dir, err)
		}
	}
	task := f.add("/f", "a")
	bob := f.env.AddUser(t, "bob", 0)
	if _, err := f.svc.Status(f.ctx, bob.ID, task.ID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("another user's task: %v, want NotFound", err)
	}
	if _, err := f.svc.Add(f.ctx, async.Request{User: bob.ID, Path: "/f", Agent: "a"}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("bob targets alice's file: %v, want NotFound", err)
	}
	f.endWindow()
	if ws, _ := f.svc.Work(f.ctx, bob.ID, "a", ""); len(ws) != 0 {
		t.Fatalf("bob's agent a got alice's work: %v", ws)
	}
	if err := f.svc.Report(f.ctx, bob.ID, "a", "", task.ID, false, ""); !errs.Is(err, errs.NotFound) {
		t.Fatalf("bob answers alice's task: %v", err)
	}
}

// TTL: a finished task is gone 30 min after its last write (embedded
// store, fake clock; the Redis TTL is in the store suite).
func TestTaskTTL(t *testing.T) {
	f := newFixture(t, openEmbedded)
	f.put("/f", []byte("x"))
	task := f.add("/f", "a")
	f.clock.Advance(async.DefaultTTL - time.Second)
	if _, err := f.svc.Status(f.ctx, f.uid, task.ID); err != nil {
		t.Fatalf("before TTL: %v", err)
	}
	f.clock.Advance(time.Second)
	if _, err := f.svc.Status(f.ctx, f.uid, task.ID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("at TTL: %v, want NotFound", err)
	}
}

// The one slow test: real time, a 1 s window and a 100 ms tick.
func TestRealTime(t *testing.T) {
	env := drivetest.New(t, drivetest.Options{ChunkSize: 1 << 10})
	u := env.AddUser(t, "alice", 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := async.New(ctx, async.Config{Store: openEmbedded(t, 0), Files: env.Drive, Window: time.Second, Tick: 100 * time.Millisecond, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	w, _ := env.Drive.Create(ctx, u.ID, "/f", drive.WriteOptions{ExpectedSize: -1})
	w.Write(bytes.Repeat([]byte("z"), 5000))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	var tasks []async.Task
	for i := range 5 {
		task, err := svc.Add(ctx, async.Request{User: u.ID, Path: "/f", Agent: fmt.Sprint("a", i), WaitForAgent: true})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	go svc.Run(ctx)
	for i := range tasks {
		agent := fmt.Sprint("a", i)
		wake, stop := svc.Wait(u.ID, agent, "")
		deadline := time.After(10 * time.Second)
		for {
			ws, err := svc.Work(ctx, u.ID, agent, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) > 0 {
				if err := svc.Report(ctx, u.ID, agent, "", ws[0].TaskID, true, ""); err != nil {
					t.Fatal(err)
				}
				break
			}
			select {
			case <-wake:
			case <-time.After(200 * time.Millisecond): // work handed before Wait: re-read
			case <-deadline:
				t.Fatalf("agent %s got no work", agent)
			}
		}
		stop()
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, task := range tasks {
		for {
			st, err := svc.Status(ctx, u.ID, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status == async.Success {
				break
			}
			if time.Now().After(deadline) || st.Status.Final() {
				t.Fatalf("task %s: %s", task.ID, st.Status)
			}
			time.Sleep(20 * time.Millisecond) // polling, bounded
		}
	}
}

func nodeOf(j async.Job) meta.Node {
	return meta.Node{Path: j.Path, UserID: j.User, Size: j.Size, FileHash: j.FileHash}
}

// countingFiles is the real drive, counting how often a version is pinned:
// at a job's start (PinVersion) and when a daemon runs a job it did not
// start (PinChunks).
type countingFiles struct {
	async.Files
	mu       sync.Mutex
	starts   int
	takeOver int
}

func (c *countingFiles) PinChunks(ctx context.Context, cs []meta.FileChunk) func() {
	c.mu.Lock()
	c.takeOver++
	c.mu.Unlock()
	return c.Files.PinChunks(ctx, cs)
}

func (c *countingFiles) PinVersion(ctx context.Context, uid int64, p string) (meta.Node, []meta.FileChunk, func(), error) {
	c.mu.Lock()
	c.starts++
	c.mu.Unlock()
	return c.Files.PinVersion(ctx, uid, p)
}

// Two daemons on one Redis (store and lock state both there, each with its
// own lock manager) ticking at once never both start a job.
func TestTwoDaemonsOneRedis(t *testing.T) {
	r := testutil.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	clock := testutil.NewClock(time.Now().Truncate(time.Second))
	env := drivetest.New(t, drivetest.Options{Clock: clock, ChunkSize: 1 << 10})
	u := env.AddUser(t, "alice", 0)
	ctx := context.Background()
	files := &countingFiles{Files: env.Drive}
	store := async.NewRedis(rdb, 0)
	var svcs []*async.Service
	for _, node := range []string{"d1", "d2"} {
		m, err := lock.NewManager(ctx, lock.Config{State: lock.NewRedis(rdb, ""), Now: clock.Now, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		s, err := async.New(ctx, async.Config{Store: store, Files: files, Locks: m, Node: node, Now: clock.Now, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		svcs = append(svcs, s)
	}
	w, _ := env.Drive.Create(ctx, u.ID, "/f", drive.WriteOptions{ExpectedSize: -1})
	w.Write([]byte("shared"))
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	const jobs = 5
	var tasks []async.Task
	for i := range jobs {
		for a := range 3 {
			task, err := svcs[i%2].Add(ctx, async.Request{User: u.ID, Path: "/f", Agent: fmt.Sprint("a", a), WaitForAgent: true})
			if err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, task)
		}
		clock.Advance(svcs[0].Window())
	}
	for range 3 {
		var wg sync.WaitGroup
		for _, s := range svcs {
			wg.Add(1)
			go func() { defer wg.Done(); s.Tick(ctx) }()
		}
		wg.Wait()
	}
	// A start pins the version; a daemon running a job it did not start
	// pins it again (PinChunks): neither may happen twice.
	if files.starts != jobs || files.takeOver != 0 {
		t.Fatalf("%d job starts for %d jobs, %d take-overs: a job ran on both daemons", files.starts, jobs, files.takeOver)
	}
	for a := range 3 {
		ws, err := svcs[1].Work(ctx, u.ID, fmt.Sprint("a", a), "")
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != jobs {
			t.Fatalf("agent a%d has %d items, want %d", a, len(ws), jobs)
		}
		for _, it := range ws {
			// Either daemon takes the answer.
			if err := svcs[a%2].Report(ctx, u.ID, it.Agent, "", it.TaskID, true, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range svcs {
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, task := range tasks {
		st, err := svcs[0].Status(ctx, u.ID, task.ID)
		if err != nil || st.Status != async.Success {
			t.Fatalf("task %s: %v %v", task.ID, st.Status, err)
		}
	}
}

// A daemon whose clock lags adds a task to a window another daemon has
// already started: the task goes to the next window's job, never into a
// running one (where it would never be handed out).
func TestLateAddGoesToNextWindow(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		first := f.add("/f", "a")
		f.clock.Advance(f.svc.Window())
		f.tick(f.svc) // the first window's job runs
		behind := testutil.NewClock(f.clock.Now().Add(-f.svc.Window()))
		lagging, err := async.New(f.ctx, async.Config{Store: f.store, Files: f.env.Drive, Locks: f.locks, Node: "lagging", Now: behind.Now, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer lagging.Close()
		late, err := lagging.Add(f.ctx, async.Request{User: f.uid, Path: "/f", Agent: "b", WaitForAgent: true})
		if err != nil {
			t.Fatal(err)
		}
		b1, _ := async.BucketOf(first.JobID)
		b2, _ := async.BucketOf(late.JobID)
		if b2 != b1+1 {
			t.Fatalf("late task in bucket %d, want %d (the running job's is %d)", b2, b1+1, b1)
		}
		if s := f.status(late.ID); s != async.Pending {
			t.Fatalf("late task %s", s)
		}
	})
}

// A file shared with other users is one job for its owner and every
// recipient asking within a window: keyed on the owner's file, pinned once,
// each target delivered by its requester's agent under the requester's
// path (never the owner's, nor in the job id they are shown). A recipient
// whose share was revoked before the job started gets nothing; the others
// do.
func TestSharedFileOneJob(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		d := f.env.Drive
		bob := f.env.AddUser(t, "bob", 0).ID
		carol := f.env.AddUser(t, "carol", 0).ID
		if _, err := d.Mkdir(f.ctx, f.uid, "/alices-folder"); err != nil {
			t.Fatal(err)
		}
		f.put("/alices-folder/f.bin", []byte("shared bytes"))
		for _, u := range []string{"bob", "carol"} {
			if _, err := d.ShareWithUser(f.ctx, f.uid, "/alices-folder", u, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Move(f.ctx, bob, "/alices-folder", "/from-alice", false); err != nil {
			t.Fatal(err)
		}
		w := f.svc.Window()
		f.clock.Advance(w - time.Duration(f.clock.Now().Unix()%int64(w/time.Second))*time.Second)
		add := func(uid int64, p, agent string) async.Task {
			t.Helper()
			if err := f.svc.Seen(f.ctx, uid, agent, ""); err != nil {
				t.Fatal(err)
			}
			task, err := f.svc.Add(f.ctx, async.Request{User: uid, Path: p, Agent: agent, TargetDir: "in"})
			if err != nil {
				t.Fatal(err)
			}
			return task
		}
		a := add(f.uid, "/alices-folder/f.bin", "a1")
		b := add(bob, "/from-alice/f.bin", "b1")
		c := add(carol, "/alices-folder/f.bin", "c1")
		if a.JobID != b.JobID || a.JobID != c.JobID {
			t.Fatalf("one shared file in jobs %s, %s, %s", a.JobID, b.JobID, c.JobID)
		}
		for _, task := range []async.Task{b, c} {
			wire := async.WireOf(async.TaskStatus{Task: task})
			if strings.Contains(wire.JobID, "alices-folder") || strings.Contains(wire.JobID, ":"+strconv.FormatInt(f.uid, 10)+":") {
				t.Fatalf("a recipient is shown the job %s", wire.JobID)
			}
		}
		if wire := async.WireOf(async.TaskStatus{Task: a}); wire.JobID != a.JobID {
			t.Fatalf("the owner is shown the job %s, want %s", wire.JobID, a.JobID)
		}
		// Carol leaves before the window ends.
		if err := d.LeaveShare(f.ctx, carol, "/alices-folder"); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(w)
		f.tick(f.svc)
		// A running job's refresh keeps the recipient's agent's work alive
		// too (the embedded store expires on the service's clock).
		now := f.clock.Now()
		if err := f.store.Touch(f.ctx, a.JobID, now.Add(25*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if ws, err := f.store.Work(f.ctx, async.AgentKey(bob, "b1", ""), now.Add(35*time.Minute)); err != nil || len(ws) != 1 {
			t.Fatalf("bob's work after the job's refresh: %+v, %v", ws, err)
		}

		for _, x := range []struct {
			uid   int64
			agent string
			task  async.Task
			path  string
		}{{f.uid, "a1", a, "/alices-folder/f.bin"}, {bob, "b1", b, "/from-alice/f.bin"}} {
			ws, err := f.svc.Work(f.ctx, x.uid, x.agent, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(ws) != 1 || ws[0].TaskID != x.task.ID || ws[0].Path != x.path || ws[0].FileName != "f.bin" {
				t.Fatalf("%s's work: %+v, want %s", x.agent, ws, x.path)
			}
			if raw, _ := json.Marshal(async.WorkWire(ws[0])); x.uid == bob && strings.Contains(string(raw), "alices-folder") {
				t.Fatalf("bob's agent is given the owner's path: %s", raw)
			}
			j, err := f.svc.Content(f.ctx, x.uid, x.task.ID)
			if err != nil {
				t.Fatal(err)
			}
			r := d.OpenVersion(f.ctx, nodeOf(j), j.Chunks)
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || string(got) != "shared bytes" {
				t.Fatalf("%s fetched %q, %v", x.agent, got, err)
			}
			if err := f.svc.Report(f.ctx, x.uid, x.agent, "", x.task.ID, true, ""); err != nil {
				t.Fatal(err)
			}
		}
		if ws, err := f.svc.Work(f.ctx, carol, "c1", ""); err != nil || len(ws) != 0 {
			t.Fatalf("carol's agent after she left: %+v, %v", ws, err)
		}
		f.tick(f.svc)
		for _, x := range []struct {
			uid  int64
			task async.Task
			want async.Status
		}{{f.uid, a, async.Success}, {bob, b, async.Success}, {carol, c, async.Failed}} {
			st, err := f.svc.Status(f.ctx, x.uid, x.task.ID)
			if err != nil || st.Status != x.want {
				t.Fatalf("task of user %d: %+v %v, want %s", x.uid, st, err, x.want)
			}
		}
	})
}
