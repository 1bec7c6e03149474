// Package storetest is the conformance suite every async.Store runs: the
// embedded (SQLite) store and the Redis store. It checks the contract of
// async.Store (SetNX creation, push order, first outcome stands, work sets,
// TTL expiry, the one-step AddTask, Touch, progress, known agents, and the
// optional Purge of a store that has it), never an implementation's keys or
// tables.
package storetest

import (
	"context"
	"testing"
	"time"

	"netdisk/async"
	"netdisk/errs"
)

// Open returns a fresh, empty store whose records live ttl.
type Open func(t *testing.T, ttl time.Duration) async.Store

// Run runs the suite.
func Run(t *testing.T, open Open) {
	t.Run("JobSetNX", func(t *testing.T) { testJobs(t, open(t, async.DefaultTTL)) })
	t.Run("TargetsTasksResults", func(t *testing.T) { testTargets(t, open(t, async.DefaultTTL)) })
	t.Run("Work", func(t *testing.T) { testWork(t, open(t, async.DefaultTTL)) })
	t.Run("TTL", func(t *testing.T) { testTTL(t, open) })
	t.Run("AddTask", func(t *testing.T) { testAddTask(t, open(t, async.DefaultTTL)) })
	t.Run("TouchProgressAgents", func(t *testing.T) { testTouch(t, open(t, async.DefaultTTL)) })
	t.Run("PurgeOwner", func(t *testing.T) { testPurgeOwner(t, open(t, async.DefaultTTL)) })
	// Optional upgrades the service finds by type assertion: a store that
	// has one is held to its contract too.
	t.Run("Purger", func(t *testing.T) { testPurger(t, open(t, async.DefaultTTL)) })
}

// purger is the optional upgrade of a store that deletes expired records
// itself (the scheduler calls it every pass).
type purger interface {
	Purge(ctx context.Context, now time.Time) error
}

// testPurger: Purge at now deletes what expired by now and nothing live.
// Reads take their time from the caller, so a read at a time before the
// expiry tells a purged record from one merely past its TTL.
func testPurger(t *testing.T, s async.Store) {
	p, ok := s.(purger)
	if !ok {
		t.Skip("the store's records expire by themselves")
	}
	ctx, ttl := context.Background(), async.DefaultTTL
	t0 := time.Now()
	put := func(name string, at time.Time) (string, string) {
		id := async.JobKey(1, "/"+name, 3)
		_, err := s.CreateJob(ctx, job(id), at)
		must(t, err)
		task := async.TaskKey(1, "/"+name, "uuid")
		must(t, s.PushTarget(ctx, id, async.Target{TaskID: task}, at))
		must(t, s.PutTask(ctx, async.Task{ID: task, JobID: id, User: 1}, at))
		return id, task
	}
	oldJob, oldTask := put("old", t0)
	youngJob, youngTask := put("young", t0.Add(ttl/2))
	must(t, p.Purge(ctx, t0.Add(ttl+time.Second)))
	if _, err := s.Job(ctx, oldJob, t0); !errs.Is(err, errs.NotFound) {
		t.Fatalf("expired job after Purge: %v, want NotFound", err)
	}
	if _, err := s.Task(ctx, oldTask, t0); !errs.Is(err, errs.NotFound) {
		t.Fatalf("expired task after Purge: %v, want NotFound", err)
	}
	if ts, err := s.Targets(ctx, oldJob, t0); err != nil || len(ts) != 0 {
		t.Fatalf("expired targets after Purge: %v, %v", ts, err)
	}
	at := t0.Add(ttl / 2)
	if _, err := s.Job(ctx, youngJob, at); err != nil {
		t.Fatalf("live job after Purge: %v", err)
	}
	if _, err := s.Task(ctx, youngTask, at); err != nil {
		t.Fatalf("live task after Purge: %v", err)
	}
	if ts, err := s.Targets(ctx, youngJob, at); err != nil || len(ts) != 1 {
		t.Fatalf("live targets after Purge: %v, %v", ts, err)
	}
}

func testAddTask(t *testing.T, s async.Store) {
	ctx, now := context.Background(), time.Now()
	id := async.JobKey(1, "/f", 7)
	task := func(n string) async.Task {
		return async.Task{ID: async.TaskKey(1, "/f", n), JobID: id, User: 1, Path: "/f", Agent: n}
	}
	target := func(n string) async.Target { return async.Target{TaskID: task(n).ID, Agent: n} }
	created, st, err := s.AddTask(ctx, job(id), target("a"), task("a"), now)
	must(t, err)
	again, st2, err := s.AddTask(ctx, job(id), target("b"), task("b"), now)
	must(t, err)
	if !created || again || st != async.Pending || st2 != async.Pending {
		t.Fatalf("AddTask: %v %s then %v %s, want created Pending then joined Pending", created, st, again, st2)
	}
	if ids, _ := s.Jobs(ctx, now); len(ids) != 1 || ids[0] != id {
		t.Fatalf("Jobs = %v: a created job is listed at once", ids)
	}
	j, err := s.Job(ctx, id, now)
	must(t, err)
	j.Status = async.Running
	must(t, s.UpdateJob(ctx, j, now))
	late, st3, err := s.AddTask(ctx, job(id), target("c"), task("c"), now)
	must(t, err)
	if late || st3 != async.Running {
		t.Fatalf("AddTask to a running job: %v %s, want nothing added and Running", late, st3)
	}
	ts, err := s.Targets(ctx, id, now)
	must(t, err)
	if len(ts) != 2 || ts[0].Agent != "a" || ts[1].Agent != "b" {
		t.Fatalf("targets %+v, want a b (c refused)", ts)
	}
	if _, err := s.Task(ctx, task("c").ID, now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the refused task was stored: %v", err)
	}
	if got, err := s.Task(ctx, task("b").ID, now); err != nil || got.Agent != "b" {
		t.Fatalf("task b: %+v %v", got, err)
	}
}

func testTouch(t *testing.T, s async.Store) {
	ctx, now := context.Background(), time.Now()
	ttl := async.DefaultTTL
	id := async.JobKey(1, "/f", 7)
	tk := async.Task{ID: async.TaskKey(1, "/f", "a"), JobID: id, User: 1, Path: "/f", Agent: "a"}
	_, _, err := s.AddTask(ctx, job(id), async.Target{TaskID: tk.ID, Agent: "a"}, tk, now)
	must(t, err)
	must(t, s.AddWork(ctx, 1, async.Work{TaskID: tk.ID, JobID: id, Agent: "a"}, now))
	must(t, s.SetProgress(ctx, id, async.Progress{TaskID: tk.ID, Bytes: 5}, now))
	must(t, s.SetProgress(ctx, id, async.Progress{TaskID: tk.ID, Bytes: 9}, now))
	ps, err := s.Progress(ctx, id, now)
	must(t, err)
	if len(ps) != 1 || ps[tk.ID].Bytes != 9 {
		t.Fatalf("progress %+v, want the latest (9)", ps)
	}
	// Touched later, everything lives TTL from the touch (read with the
	// embedded store's now; Redis expires on its own clock, checked by the
	// async tests).
	later := now.Add(ttl / 2)
	must(t, s.Touch(ctx, id, later))
	at := now.Add(ttl + time.Second)
	if _, err := s.Job(ctx, id, at); err != nil {
		t.Fatalf("job after Touch: %v", err)
	}
	if _, err := s.Task(ctx, tk.ID, at); err != nil {
		t.Fatalf("task after Touch: %v", err)
	}
	if ws, _ := s.Work(ctx, async.AgentKey(1, "a", ""), at); len(ws) != 1 {
		t.Fatalf("work after Touch: %v", ws)
	}
	if err := s.Touch(ctx, async.JobKey(1, "/none", 1), now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Touch of a missing job: %v, want NotFound", err)
	}
	// Known agents: per user, agent and container.
	must(t, s.SeenAgent(ctx, async.AgentKey(1, "a", ""), now))
	for k, want := range map[string]bool{async.AgentKey(1, "a", ""): true, async.AgentKey(1, "a", "c"): false,
		async.AgentKey(2, "a", ""): false, async.AgentKey(1, "b", ""): false} {
		if got, err := s.KnownAgent(ctx, k, now); err != nil || got != want {
			t.Errorf("KnownAgent(%s) = %v %v, want %v", k, got, err, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func job(id string) async.Job {
	return async.Job{ID: id, User: 1, Path: "/f", Bucket: 7, Status: async.Pending, Created: time.Now().UTC().Truncate(time.Millisecond)}
}

func testJobs(t *testing.T, s async.Store) {
	ctx, now := context.Background(), time.Now()
	id := async.JobKey(1, "/f", 7)
	created, err := s.CreateJob(ctx, job(id), now)
	must(t, err)
	other := job(id)
	other.Path = "/other"
	again, err := s.CreateJob(ctx, other, now)
	must(t, err)
	if !created || again {
		t.Fatalf("CreateJob: %v then %v, want true then false", created, again)
	}
	j, err := s.Job(ctx, id, now)
	must(t, err)
	if j.Path != "/f" || j.Status != async.Pending || j.Bucket != 7 {
		t.Fatalf("job %+v: the first create must stand", j)
	}
	j.Status, j.FileHash, j.Dispatched = async.Running, "abc", 3
	must(t, s.UpdateJob(ctx, j, now))
	if j2, _ := s.Job(ctx, id, now); j2.Status != async.Running || j2.FileHash != "abc" || j2.Dispatched != 3 {
		t.Fatalf("updated job %+v", j2)
	}
	if err := s.UpdateJob(ctx, job("AsyncDownloadJob:1:/none:1"), now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("update of a missing job: %v, want NotFound", err)
	}
	if _, err := s.Job(ctx, "AsyncDownloadJob:1:/none:1", now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("missing job: %v, want NotFound", err)
	}
	ids, err := s.Jobs(ctx, now)
	must(t, err)
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("Jobs = %v", ids)
	}
	must(t, s.DeleteJob(ctx, id))
	must(t, s.DeleteJob(ctx, id))
	if ids, _ := s.Jobs(ctx, now); len(ids) != 0 {
		t.Fatalf("Jobs after delete = %v", ids)
	}
}

func testTargets(t *testing.T, s async.Store) {
	ctx, now := context.Background(), time.Now()
	id := async.JobKey(1, "/f", 7)
	_, err := s.CreateJob(ctx, job(id), now)
	must(t, err)
	for _, n := range []string{"a", "b", "c"} {
		must(t, s.PushTarget(ctx, id, async.Target{TaskID: "t-" + n, Agent: n, TargetDir: "d"}, now))
	}
	ts, err := s.Targets(ctx, id, now)
	must(t, err)
	if len(ts) != 3 || ts[0].TaskID != "t-a" || ts[2].TaskID != "t-c" || ts[1].Agent != "b" {
		t.Fatalf("targets %+v, want a b c oldest first", ts)
	}
	task := async.Task{ID: async.TaskKey(1, "/f", "u1"), JobID: id, User: 1, Path: "/f", Agent: "a", TargetDir: "d"}
	must(t, s.PutTask(ctx, task, now))
	got, err := s.Task(ctx, task.ID, now)
	must(t, err)
	if got.JobID != id || got.Agent != "a" || got.TargetDir != "d" {
		t.Fatalf("task %+v", got)
	}
	if _, err := s.Task(ctx, "AsyncDownloadTask:1:/f:none", now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("missing task: %v", err)
	}
	set, err := s.SetResult(ctx, id, async.Result{TaskID: "t-a", Status: async.Success}, now)
	must(t, err)
	set2, err := s.SetResult(ctx, id, async.Result{TaskID: "t-a", Status: async.Timeout}, now)
	must(t, err)
	_, err = s.SetResult(ctx, id, async.Result{TaskID: "t-b", Status: async.Failed, Message: "disk full"}, now)
	must(t, err)
	if !set || set2 {
		t.Fatalf("SetResult: %v then %v: the first outcome must stand", set, set2)
	}
	rs, err := s.Results(ctx, id, now)
	must(t, err)
	if len(rs) != 2 || rs["t-a"].Status != async.Success || rs["t-b"].Message != "disk full" {
		t.Fatalf("results %+v", rs)
	}
}

func testWork(t *testing.T, s async.Store) {
	ctx, now := context.Background(), time.Now()
	w := func(task, agent, container string) async.Work {
		return async.Work{TaskID: task, JobID: "j", Agent: agent, Container: container, FileHash: "h", Size: 3}
	}
	must(t, s.AddWork(ctx, 1, w("t2", "a", ""), now))
	must(t, s.AddWork(ctx, 1, w("t1", "a", ""), now))
	must(t, s.AddWork(ctx, 1, w("t3", "a", "c1"), now))
	must(t, s.AddWork(ctx, 2, w("t4", "a", ""), now))
	ws, err := s.Work(ctx, async.AgentKey(1, "a", ""), now)
	must(t, err)
	if len(ws) != 2 || ws[0].TaskID != "t1" || ws[1].TaskID != "t2" || ws[0].Size != 3 {
		t.Fatalf("work of 1/a: %+v (another container's or user's work must not show)", ws)
	}
	must(t, s.DoneWork(ctx, async.AgentKey(1, "a", ""), "t1"))
	must(t, s.DoneWork(ctx, async.AgentKey(1, "a", ""), "t1"))
	if ws, _ := s.Work(ctx, async.AgentKey(1, "a", ""), now); len(ws) != 1 || ws[0].TaskID != "t2" {
		t.Fatalf("work after done: %+v", ws)
	}
}

// testTTL writes records that expire shortly in real time (the Redis store
// expires keys on Redis's clock) and waits, bounded, for them to go.
func testTTL(t *testing.T, open Open) {
	ctx := context.Background()
	ttl := async.DefaultTTL
	s := open(t, ttl)
	start := time.Now().Add(-ttl + 2*time.Second) // expires 2 s from now
	id := async.JobKey(1, "/f", 9)
	_, err := s.CreateJob(ctx, job(id), start)
	must(t, err)
	must(t, s.PushTarget(ctx, id, async.Target{TaskID: "t"}, start))
	task := async.Task{ID: async.TaskKey(1, "/f", "ttl"), JobID: id, User: 1}
	must(t, s.PutTask(ctx, task, start))
	must(t, s.AddWork(ctx, 1, async.Work{TaskID: "t", Agent: "a"}, start))
	if _, err := s.Task(ctx, task.ID, time.Now()); err != nil {
		t.Fatalf("task before its TTL: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		now := time.Now()
		_, terr := s.Task(ctx, task.ID, now)
		_, jerr := s.Job(ctx, id, now)
		ts, _ := s.Targets(ctx, id, now)
		ids, _ := s.Jobs(ctx, now)
		ws, _ := s.Work(ctx, async.AgentKey(1, "a", ""), now)
		if errs.Is(terr, errs.NotFound) && errs.Is(jerr, errs.NotFound) && len(ts) == 0 && len(ids) == 0 && len(ws) == 0 {
			break
		}
		if now.After(deadline) {
			t.Fatalf("records outlived their TTL: task %v, job %v, targets %d, jobs %v, work %d", terr, jerr, len(ts), ids, len(ws))
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	// The job's key is free again: a new job of that ID is created.
	created, err := s.CreateJob(ctx, job(id), time.Now())
	must(t, err)
	if !created {
		t.Fatal("an expired job's key is not free")
	}
}

// testPurgeOwner: purging user 1 removes its jobs (with their targets and
// outcomes, and from the live list), tasks and agents' work, and nothing of
// user 12 (whose id starts with 1) or 2.
func testPurgeOwner(t *testing.T, s async.Store) {
	ctx, now := context.Background(), time.Now()
	users := []int64{1, 12, 2}
	for _, u := range users {
		id := async.JobKey(u, "/f*[x]", 7)
		j := job(id)
		j.User = u
		_, err := s.CreateJob(ctx, j, now)
		must(t, err)
		task := async.TaskKey(u, "/f*[x]", "uuid")
		must(t, s.PushTarget(ctx, id, async.Target{TaskID: task, Agent: "a"}, now))
		must(t, s.PutTask(ctx, async.Task{ID: task, JobID: id, User: u, Agent: "a"}, now))
		_, err = s.SetResult(ctx, id, async.Result{TaskID: task, Status: async.Success}, now)
		must(t, err)
		must(t, s.AddWork(ctx, u, async.Work{TaskID: task, JobID: id, Agent: "a"}, now))
		must(t, s.SetProgress(ctx, id, async.Progress{TaskID: task, Bytes: 5}, now))
		must(t, s.SeenAgent(ctx, async.AgentKey(u, "a", ""), now))
	}
	must(t, s.PurgeOwner(ctx, 1))
	live, err := s.Jobs(ctx, now)
	must(t, err)
	for _, u := range users {
		id, task := async.JobKey(u, "/f*[x]", 7), async.TaskKey(u, "/f*[x]", "uuid")
		_, jerr := s.Job(ctx, id, now)
		_, terr := s.Task(ctx, task, now)
		targets, _ := s.Targets(ctx, id, now)
		results, _ := s.Results(ctx, id, now)
		work, _ := s.Work(ctx, async.AgentKey(u, "a", ""), now)
		progress, _ := s.Progress(ctx, id, now)
		known, _ := s.KnownAgent(ctx, async.AgentKey(u, "a", ""), now)
		listed := false
		for _, l := range live {
			listed = listed || l == id
		}
		gone := errs.Is(jerr, errs.NotFound) && errs.Is(terr, errs.NotFound) && len(targets) == 0 && len(results) == 0 &&
			len(work) == 0 && len(progress) == 0 && !known && !listed
		kept := jerr == nil && terr == nil && len(targets) == 1 && len(results) == 1 && len(work) == 1 &&
			len(progress) == 1 && known && listed
		if u == 1 && !gone || u != 1 && !kept {
			t.Fatalf("user %d after purging user 1: job %v, task %v, %d targets, %d results, %d work items, %d progress, known %v, listed %v",
				u, jerr, terr, len(targets), len(results), len(work), len(progress), known, listed)
		}
	}
}
