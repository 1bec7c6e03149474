package async_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/async"
	"netdisk/errs"
	"netdisk/testutil"
)

// Answers recorded before the deadline count even when the scheduler's
// pass runs after it: the job ends Success, not Timeout. An answer after
// the deadline (but before the pass) is not recorded: its target is Timeout.
func TestAnswersBeforeDeadlineCount(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		a, b := f.add("/f", "a"), f.add("/f", "b")
		f.endWindow()
		f.clock.Advance(async.DefaultTimeout - 2*time.Second)
		f.deliver("a", true)
		f.deliver("b", true)
		f.clock.Advance(2*time.Second + async.DefaultTick) // the pass comes after the deadline
		f.tick(f.svc)
		if j, _ := f.svc.Job(f.ctx, a.JobID); j.Status != async.Success {
			t.Fatalf("job %s (%s), want Success: both answered before the deadline", j.Status, j.Message)
		}
		for _, id := range []string{a.ID, b.ID} {
			if s := f.status(id); s != async.Success {
				t.Fatalf("task %s: %s, want Success", id, s)
			}
		}

		// The next window's job: one answer in time, one after the deadline.
		c, d := f.add("/f", "c"), f.add("/f", "d")
		f.endWindow()
		f.clock.Advance(async.DefaultTimeout - time.Second)
		f.deliver("c", true)
		f.clock.Advance(2 * time.Second)
		f.deliver("d", true)
		f.tick(f.svc)
		if j, _ := f.svc.Job(f.ctx, c.JobID); j.Status != async.Timeout {
			t.Fatalf("job %s, want Timeout: d answered after the deadline", j.Status)
		}
		if s := f.status(c.ID); s != async.Success {
			t.Fatalf("c answered in time: %s", s)
		}
		if s := f.status(d.ID); s != async.Timeout {
			t.Fatalf("d answered after the deadline: %s, want Timeout", s)
		}
	})
}

// hookStore is a real store whose AddTask and PushTarget first run a hook
// once: what another daemon does between a request's reading of its job
// and its pushing of the target.
type hookStore struct {
	async.Store
	once sync.Once
	hook func()
}

func (h *hookStore) fire() { h.once.Do(h.hook) }

func (h *hookStore) PushTarget(ctx context.Context, id string, t async.Target, now time.Time) error {
	h.fire()
	return h.Store.PushTarget(ctx, id, t, now)
}

func (h *hookStore) AddTask(ctx context.Context, j async.Job, t async.Target, task async.Task, now time.Time) (bool, async.Status, error) {
	h.fire()
	return h.Store.AddTask(ctx, j, t, task, now)
}

// A request of a window whose job starts and ends while the request is
// being added (a daemon with a lagging clock) never joins that ended job
// (it would report the job's Success without any delivery): it goes to the
// next window's job and is delivered there.
func TestLateTargetJoinsTheNextJob(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		first := f.add("/f", "a")
		f.clock.Advance(f.svc.Window())
		f.seen("b")
		hs := &hookStore{Store: f.store}
		hs.hook = func() {
			f.tick(f.svc) // starts the first job
			f.deliver("a", true)
			f.tick(f.svc) // and ends it
		}
		behind := testutil.NewClock(f.clock.Now().Add(-f.svc.Window())) // still in the first window
		lagging, err := async.New(f.ctx, async.Config{Store: hs, Files: f.env.Drive, Locks: f.locks, Node: "lagging", Now: behind.Now, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer lagging.Close()
		late, err := lagging.Add(f.ctx, async.Request{User: f.uid, Path: "/f", Agent: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if j, _ := f.svc.Job(f.ctx, first.JobID); j.Status != async.Success {
			t.Fatalf("first job %s: the hook did not end it", j.Status)
		}
		if b1, b2 := bucketOf(first.JobID), bucketOf(late.JobID); b2 != b1+1 {
			t.Fatalf("late task in bucket %d, want the next one %d", b2, b1+1)
		}
		if s := f.status(late.ID); s != async.Pending {
			t.Fatalf("late task: %s in job %s, want Pending in the next job (first job %s)", s, late.JobID, first.JobID)
		}
		f.endWindow()
		if got := f.deliver("b", true); len(got) != 1 || got[0] != "x" {
			t.Fatalf("late task delivered %q", got)
		}
		f.tick(f.svc)
		if s := f.status(late.ID); s != async.Success {
			t.Fatalf("late task: %s", s)
		}
	})
}

// An agent nobody ever ran is refused at once, unless the request waits
// for it; a container is its own agent; once the agent opened its stream
// it is accepted.
func TestUnknownAgentRefused(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		req := async.Request{User: f.uid, Path: "/f", Agent: "typo"}
		_, err := f.svc.Add(f.ctx, req)
		if !errs.Is(err, errs.NotFound) || !strings.Contains(errs.Message(err), "typo") || strings.Contains(errs.Message(err), "\n") {
			t.Fatalf("unknown agent: %v, want NotFound naming it on one line", err)
		}
		req.WaitForAgent = true
		if _, err := f.svc.Add(f.ctx, req); err != nil {
			t.Fatalf("with WaitForAgent: %v", err)
		}
		f.seen("real")
		if _, err := f.svc.Add(f.ctx, async.Request{User: f.uid, Path: "/f", Agent: "real"}); err != nil {
			t.Fatalf("a registered agent: %v", err)
		}
		if _, err := f.svc.Add(f.ctx, async.Request{User: f.uid, Path: "/f", Agent: "real", Container: "c1"}); !errs.Is(err, errs.NotFound) {
			t.Fatalf("a container the agent never served: %v, want NotFound", err)
		}
		bob := f.env.AddUser(t, "bob", 0)
		if ok, err := f.store.KnownAgent(f.ctx, async.AgentKey(bob.ID, "real", ""), f.clock.Now()); ok || err != nil {
			t.Fatalf("alice's agent known as bob's: %v %v", ok, err)
		}
	})
}

// An agent's progress makes its task Downloading with bytes of the size;
// another agent cannot report it; the outcome ends it.
func TestProgress(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", make([]byte, 2000))
		a := f.add("/f", "a")
		if err := f.svc.Progress(f.ctx, f.uid, "a", "", a.ID, 0); err != nil {
			t.Fatalf("progress of a pending job: %v, want it ignored", err)
		}
		if s := f.status(a.ID); s != async.Pending {
			t.Fatalf("%s, want Pending", s)
		}
		f.endWindow()
		if err := f.svc.Progress(f.ctx, f.uid, "a", "", a.ID, 900); err != nil {
			t.Fatal(err)
		}
		st, err := f.svc.Status(f.ctx, f.uid, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != async.Downloading || st.Bytes != 900 || st.Size != 2000 {
			t.Fatalf("status %s %d/%d, want Downloading 900/2000", st.Status, st.Bytes, st.Size)
		}
		if w := async.WireOf(st); w.Status != "Downloading" || w.Bytes != 900 || w.Size != 2000 {
			t.Fatalf("on the wire: %+v", w)
		}
		if err := f.svc.Progress(f.ctx, f.uid, "other", "", a.ID, 10); !errs.Is(err, errs.NotFound) {
			t.Fatalf("another agent's progress: %v, want NotFound", err)
		}
		f.deliver("a", true)
		if s := f.status(a.ID); s != async.Success {
			t.Fatalf("after the answer: %s", s)
		}
	})
}

// A timeout beyond the TTL: the running job, its tasks and its agents'
// work are refreshed while it runs, so its tasks are still there (not 404)
// when it ends, 45 minutes after it started with a 30-minute TTL.
func TestLongTimeoutOutlivesTTL(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		svc, err := async.New(f.ctx, async.Config{Store: f.store, Files: f.env.Drive, Locks: f.locks, Node: "long",
			Timeout: 45 * time.Minute, Now: f.clock.Now, Log: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		f.svc.Close()
		f.svc = svc
		f.put("/f", []byte("x"))
		a, b := f.add("/f", "a"), f.add("/f", "b")
		f.clock.Advance(svc.Window())
		f.tick(svc)
		f.deliver("a", true)
		for range 44 {
			f.clock.Advance(time.Minute)
			f.tick(svc)
			if ws, _ := svc.Work(f.ctx, f.uid, "b", ""); len(ws) != 1 {
				t.Fatalf("at %v: b's work %v, want its item", f.clock.Now(), ws)
			}
		}
		if s := f.status(b.ID); s != async.Running {
			t.Fatalf("after 44 min: %s, want Running", s)
		}
		f.clock.Advance(time.Minute)
		f.tick(svc)
		if s := f.status(a.ID); s != async.Success {
			t.Fatalf("a: %s", s)
		}
		if s := f.status(b.ID); s != async.Timeout {
			t.Fatalf("b: %s, want Timeout", s)
		}
	})
}

// The same on Redis's own clock: after a refresh every key of a running job
// (job, targets, outcomes, tasks, the agents' work) expires TTL after it.
func TestRedisRunningJobKeysRefreshed(t *testing.T) {
	r := testutil.StartRedis(t)
	rdb := r.Client()
	f := newFixture(t, func(t *testing.T, ttl time.Duration) async.Store { return async.NewRedis(rdb, ttl) })
	f.put("/f", []byte("x"))
	a, b := f.add("/f", "a"), f.add("/f", "b")
	f.endWindow()
	f.deliver("a", true)
	f.clock.Advance(5 * time.Minute) // beyond TouchEvery, within the timeout
	f.tick(f.svc)
	want := f.clock.Now().Add(async.DefaultTTL).UnixMilli()
	keys := []string{a.JobID, async.TargetsKey(a.JobID), async.ResultsKey(a.JobID), a.ID, b.ID,
		async.WorkKey(async.AgentKey(f.uid, "b", ""))}
	for _, k := range keys {
		got, err := rdb.Do(f.ctx, "PEXPIRETIME", k).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s expires at %d, want %d (now+TTL)", k, got, want)
		}
	}
}

// AddTask is one step: when registering the job in the index fails, no
// job is left behind that the scheduler never sees; the next request
// creates it and it runs.
func TestRedisAddIsOneStep(t *testing.T) {
	r := testutil.StartRedis(t)
	rdb := r.Client()
	f := newFixture(t, func(t *testing.T, ttl time.Duration) async.Store { return async.NewRedis(rdb, ttl) })
	f.put("/f", []byte("x"))
	f.seen("a")
	// The second write fails: the index is of the wrong type.
	if err := rdb.Set(f.ctx, async.IndexKey, "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Add(f.ctx, async.Request{User: f.uid, Path: "/f", Agent: "a"}); err == nil {
		t.Fatal("Add succeeded with the index unwritable")
	}
	rdb.Del(f.ctx, async.IndexKey)
	task := f.add("/f", "a")
	f.endWindow()
	if s := f.status(task.ID); s != async.Running {
		t.Fatalf("task %s, want Running: its job was never scheduled", s)
	}
	// CreateJob is one step too.
	if err := rdb.Set(f.ctx, async.IndexKey, "not a zset", 0).Err(); err != nil {
		t.Fatal(err)
	}
	id := async.JobKey(f.uid, "/g", 1)
	if _, err := f.store.CreateJob(f.ctx, async.Job{ID: id, User: f.uid, Path: "/g", Status: async.Pending}, f.clock.Now()); err == nil {
		t.Fatal("CreateJob succeeded with the index unwritable")
	}
	if n, _ := rdb.Exists(f.ctx, id).Result(); n != 0 {
		t.Fatal("CreateJob left a job that is not in the index")
	}
}

// A Redis that refuses writes (a replica during a failover) is Unavailable
// (503, retried by agents and clients) through every write of the store.
func TestRedisReadOnlyReplicaIsUnavailable(t *testing.T) {
	ctx := context.Background()
	master, replica := testutil.StartRedis(t), testutil.StartRedis(t)
	now := time.Now()
	// A running job on the master, copied to the replica.
	ms := async.NewRedis(master.Client(), time.Hour)
	id := async.JobKey(1, "/f", 1)
	job := async.Job{ID: id, User: 1, Path: "/f", Bucket: 1, Status: async.Pending}
	task := async.Task{ID: async.TaskKey(1, "/f", "u"), JobID: id, User: 1, Agent: "a"}
	target := async.Target{TaskID: task.ID, Agent: "a"}
	if _, _, err := ms.AddTask(ctx, job, target, task, now); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(master.Addr)
	rdb := replica.Client()
	if err := rdb.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for n, _ := rdb.Exists(ctx, task.ID).Result(); n == 0; n, _ = rdb.Exists(ctx, task.ID).Result() {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync")
		}
		time.Sleep(20 * time.Millisecond) // polling the replication, bounded
	}
	s := async.NewRedis(rdb, time.Hour)
	job.Status = async.Running
	work := async.Work{TaskID: task.ID, JobID: id, Agent: "a"}
	writes := map[string]func() error{
		"CreateJob": func() error { _, err := s.CreateJob(ctx, async.Job{ID: async.JobKey(1, "/g", 1)}, now); return err },
		"AddTask": func() error {
			_, _, err := s.AddTask(ctx, async.Job{ID: async.JobKey(1, "/g", 1), Status: async.Pending}, target, task, now)
			return err
		},
		"UpdateJob":   func() error { return s.UpdateJob(ctx, job, now) },
		"DeleteJob":   func() error { return s.DeleteJob(ctx, id) },
		"PushTarget":  func() error { return s.PushTarget(ctx, id, target, now) },
		"PutTask":     func() error { return s.PutTask(ctx, task, now) },
		"SetResult":   func() error { _, err := s.SetResult(ctx, id, async.Result{TaskID: task.ID}, now); return err },
		"AddWork":     func() error { return s.AddWork(ctx, 1, work, now) },
		"DoneWork":    func() error { return s.DoneWork(ctx, async.AgentKey(1, "a", ""), task.ID) },
		"Touch":       func() error { return s.Touch(ctx, id, now) },
		"SetProgress": func() error { return s.SetProgress(ctx, id, async.Progress{TaskID: task.ID}, now) },
		"SeenAgent":   func() error { return s.SeenAgent(ctx, async.AgentKey(1, "a", ""), now) },
	}
	for name, write := range writes {
		err := write()
		if k := errs.KindOf(err); err == nil || k != errs.Unavailable {
			t.Errorf("%s on a read-only replica: %v (kind %v), want Unavailable", name, err, k)
		}
	}
}

func bucketOf(id string) int64 {
	b, _ := async.BucketOf(id)
	return b
}

// A target found in an ended job without an outcome (pushed there by the
// two-call add of older daemons) was never delivered: its task does not
// take the job's Success.
func TestTargetPushedAfterTheEndIsNotTheJobs(t *testing.T) {
	both(t, func(t *testing.T, f *fixture) {
		f.put("/f", []byte("x"))
		a := f.add("/f", "a")
		f.endWindow()
		f.deliver("a", true)
		f.tick(f.svc)
		now := f.clock.Now()
		late := async.Task{ID: async.TaskKey(f.uid, "/f", "late"), JobID: a.JobID, User: f.uid, Path: "/f", Agent: "b"}
		if err := f.store.PushTarget(f.ctx, a.JobID, async.Target{TaskID: late.ID, Agent: "b"}, now); err != nil {
			t.Fatal(err)
		}
		if err := f.store.PutTask(f.ctx, late, now); err != nil {
			t.Fatal(err)
		}
		st, err := f.svc.Status(f.ctx, f.uid, late.ID)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status == async.Success || !st.Status.Final() {
			t.Fatalf("a target pushed after its job's Success: %s %q, want a failure of its own", st.Status, st.Message)
		}
	})
}
