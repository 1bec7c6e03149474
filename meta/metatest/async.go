package metatest

import (
	"context"
	"slices"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
)

// OpenAsync returns a fresh, empty async record store.
type OpenAsync func(t *testing.T) meta.AsyncJobs

// RunAsync checks the meta.AsyncJobs contract: SetNX creation, push order,
// first outcome stands, work sets, expiry at the given instants and its
// extension (AsyncTouch).
func RunAsync(t *testing.T, open OpenAsync) {
	ctx := context.Background()
	now := t0
	ttl := 30 * time.Minute
	exp := now.Add(ttl)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// openJob opens a store holding job "j" with its target "t" and its
	// task "task", all live until exp.
	openJob := func(t *testing.T, status, data string) meta.AsyncJobs {
		t.Helper()
		s := open(t)
		_, err := s.AsyncCreateJob(ctx, "j", status, data, exp, now)
		must(err)
		must(s.AsyncPushTarget(ctx, "j", "t", exp))
		must(s.AsyncPutTask(ctx, "task", "x", exp))
		return s
	}
	t.Run("JobsSetNX", func(t *testing.T) {
		s := open(t)
		firstWriteWins(t, "create job", func(data string) (bool, error) {
			return s.AsyncCreateJob(ctx, "j1", "Pending", data, exp, now)
		}, "a", "b")
		st, data, err := s.AsyncJob(ctx, "j1", now)
		must(err)
		if st != "Pending" || data != "a" {
			t.Fatalf("job = %q %q, want the first", st, data)
		}
		must(s.AsyncUpdateJob(ctx, "j1", "Running", "c", exp.Add(time.Minute), now))
		if st, data, _ := s.AsyncJob(ctx, "j1", now); st != "Running" || data != "c" {
			t.Fatalf("updated job = %q %q", st, data)
		}
		wantKind(t, "update of a missing job", s.AsyncUpdateJob(ctx, "nope", "Running", "", exp, now), errs.NotFound)
		_, _, err = s.AsyncJob(ctx, "nope", now)
		wantKind(t, "missing job", err, errs.NotFound)
		ids, err := s.AsyncJobs(ctx, now)
		must(err)
		if !slices.Equal(ids, []string{"j1"}) {
			t.Fatalf("jobs %v", ids)
		}
		must(s.AsyncDeleteJob(ctx, "j1"))
		must(s.AsyncDeleteJob(ctx, "j1"))
		if _, _, err := s.AsyncJob(ctx, "j1", now); !errs.Is(err, errs.NotFound) {
			t.Fatalf("deleted job: %v", err)
		}
	})
	t.Run("TargetsTasksResultsWork", func(t *testing.T) {
		s := open(t)
		_, err := s.AsyncCreateJob(ctx, "j", "Pending", "", exp, now)
		must(err)
		for _, d := range []string{"t1", "t2", "t3"} {
			must(s.AsyncPushTarget(ctx, "j", d, exp))
		}
		ts, err := s.AsyncTargets(ctx, "j", now)
		must(err)
		if !slices.Equal(ts, []string{"t1", "t2", "t3"}) {
			t.Fatalf("targets %v", ts)
		}
		must(s.AsyncPutTask(ctx, "task", "x", exp))
		if d, err := s.AsyncTask(ctx, "task", now); err != nil || d != "x" {
			t.Fatalf("task %q %v", d, err)
		}
		_, err = s.AsyncTask(ctx, "none", now)
		wantKind(t, "missing task", err, errs.NotFound)
		firstWriteWins(t, "set result", func(result string) (bool, error) {
			return s.AsyncSetResult(ctx, "j", "t1", result, exp, now)
		}, "ok", "failed")
		rs, err := s.AsyncResults(ctx, "j", now)
		must(err)
		if len(rs) != 1 || rs["t1"] != "ok" {
			t.Fatalf("results %v", rs)
		}
		must(s.AsyncAddWork(ctx, "a", "i2", "w2", exp))
		must(s.AsyncAddWork(ctx, "a", "i1", "w1", exp))
		must(s.AsyncAddWork(ctx, "b", "i1", "other", exp))
		must(s.AsyncDoneWork(ctx, "a", "i2"))
		must(s.AsyncDoneWork(ctx, "a", "i2"))
		if w, err := s.AsyncWork(ctx, "a", now); err != nil || !slices.Equal(w, []string{"w1"}) {
			t.Fatalf("work %v %v", w, err)
		}
	})
	t.Run("AddTask", func(t *testing.T) {
		s := open(t)
		created, st, err := s.AsyncAddTask(ctx, "j", "Pending", "job", "t1", "task1", "x1", exp, now)
		must(err)
		again, st2, err := s.AsyncAddTask(ctx, "j", "Pending", "other", "t2", "task2", "x2", exp, now)
		must(err)
		if !created || again || st != "Pending" || st2 != "Pending" {
			t.Fatalf("AddTask: %v %q then %v %q", created, st, again, st2)
		}
		if _, data, _ := s.AsyncJob(ctx, "j", now); data != "job" {
			t.Fatalf("job %q: the first create must stand", data)
		}
		if ts, _ := s.AsyncTargets(ctx, "j", now); !slices.Equal(ts, []string{"t1", "t2"}) {
			t.Fatalf("targets %v", ts)
		}
		// Past collecting: nothing is added, the status tells why.
		must(s.AsyncUpdateJob(ctx, "j", "Running", "job", exp, now))
		_, st3, err := s.AsyncAddTask(ctx, "j", "Pending", "job", "t3", "task3", "x3", exp, now)
		must(err)
		if st3 != "Running" {
			t.Fatalf("status %q, want Running", st3)
		}
		if ts, _ := s.AsyncTargets(ctx, "j", now); len(ts) != 2 {
			t.Fatalf("a target was added to a running job: %v", ts)
		}
		if _, err := s.AsyncTask(ctx, "task3", now); !errs.Is(err, errs.NotFound) {
			t.Fatalf("task of a refused add stored: %v", err)
		}
		if d, err := s.AsyncTask(ctx, "task2", now); err != nil || d != "x2" {
			t.Fatalf("task2 %q %v", d, err)
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		s := openJob(t, "Pending", "old")
		_, err := s.AsyncSetResult(ctx, "j", "t", "ok", exp, now)
		must(err)
		must(s.AsyncAddWork(ctx, "a", "i", "w", exp))
		just := exp.Add(-time.Nanosecond)
		if _, err := s.AsyncTask(ctx, "task", just); err != nil {
			t.Fatalf("task before its TTL: %v", err)
		}
		if _, _, err := s.AsyncJob(ctx, "j", exp); !errs.Is(err, errs.NotFound) {
			t.Fatalf("job at its TTL: %v, want NotFound", err)
		}
		if _, err := s.AsyncTask(ctx, "task", exp); !errs.Is(err, errs.NotFound) {
			t.Fatalf("task at its TTL: %v, want NotFound", err)
		}
		if ts, _ := s.AsyncTargets(ctx, "j", exp); len(ts) != 0 {
			t.Fatalf("targets at TTL %v", ts)
		}
		if ids, _ := s.AsyncJobs(ctx, exp); len(ids) != 0 {
			t.Fatalf("jobs at TTL %v", ids)
		}
		if w, _ := s.AsyncWork(ctx, "a", exp); len(w) != 0 {
			t.Fatalf("work at TTL %v", w)
		}
		// An expired job's id is free again, with nothing of the old one.
		created, err := s.AsyncCreateJob(ctx, "j", "Pending", "new", exp.Add(ttl), exp)
		must(err)
		if !created {
			t.Fatal("an expired job's id was not free")
		}
		if ts, _ := s.AsyncTargets(ctx, "j", exp); len(ts) != 0 {
			t.Fatalf("new job inherits targets %v", ts)
		}
		if set, _ := s.AsyncSetResult(ctx, "j", "t", "again", exp.Add(ttl), exp); !set {
			t.Fatal("new job inherits the old outcome")
		}
		must(s.AsyncPurge(ctx, exp))
		if _, err := s.AsyncTask(ctx, "task", now); !errs.Is(err, errs.NotFound) {
			t.Fatalf("purged task still read: %v", err)
		}
	})
	t.Run("Touch", func(t *testing.T) {
		s := openJob(t, "Running", "job")
		must(s.AsyncPutTask(ctx, "gone", "x", now.Add(time.Minute)))
		must(s.AsyncAddWork(ctx, "a", "task", "w", exp))
		later, laterExp := now.Add(2*time.Minute), exp.Add(2*time.Minute)
		must(s.AsyncTouch(ctx, "j", []string{"task", "gone"}, [][2]string{{"a", "task"}}, laterExp, later))
		if _, _, err := s.AsyncJob(ctx, "j", exp); err != nil {
			t.Fatalf("touched job at its old expiry: %v", err)
		}
		if _, err := s.AsyncTask(ctx, "task", exp); err != nil {
			t.Fatalf("touched task at its old expiry: %v", err)
		}
		if ts, _ := s.AsyncTargets(ctx, "j", exp); len(ts) != 1 {
			t.Fatalf("touched targets at the old expiry: %v", ts)
		}
		if w, _ := s.AsyncWork(ctx, "a", exp); len(w) != 1 {
			t.Fatalf("touched work at the old expiry: %v", w)
		}
		if _, err := s.AsyncTask(ctx, "gone", later); !errs.Is(err, errs.NotFound) {
			t.Fatalf("an expired task came back: %v", err)
		}
		if err := s.AsyncTouch(ctx, "none", nil, nil, laterExp, later); !errs.Is(err, errs.NotFound) {
			t.Fatalf("touch of a missing job: %v, want NotFound", err)
		}
	})
	t.Run("PurgeOwner", func(t *testing.T) {
		s := open(t)
		// User 1's records, and user 12's, whose keys share the
		// characters "1" but not the prefix "x:1:" (nor do wildcards).
		for _, u := range []string{"1", "12", "%"} {
			job, task, agent := "job:"+u+":/f:1", "task:"+u+":/f:u", u+":agent:"
			_, _, err := s.AsyncAddTask(ctx, job, "Pending", "j", "t", task, "task", exp, now)
			must(err)
			_, err = s.AsyncSetResult(ctx, job, task, "Success", exp, now)
			must(err)
			must(s.AsyncAddWork(ctx, agent, task, "w", exp))
		}
		must(s.AsyncPurgeOwner(ctx, "job:1:", "task:1:", "1:"))
		for _, u := range []string{"1", "12", "%"} {
			job, task, agent := "job:"+u+":/f:1", "task:"+u+":/f:u", u+":agent:"
			_, _, jerr := s.AsyncJob(ctx, job, now)
			_, terr := s.AsyncTask(ctx, task, now)
			targets, _ := s.AsyncTargets(ctx, job, now)
			results, _ := s.AsyncResults(ctx, job, now)
			work, _ := s.AsyncWork(ctx, agent, now)
			gone := errs.Is(jerr, errs.NotFound) && errs.Is(terr, errs.NotFound) && len(targets) == 0 && len(results) == 0 && len(work) == 0
			kept := jerr == nil && terr == nil && len(targets) == 1 && len(results) == 1 && len(work) == 1
			if u == "1" && !gone || u != "1" && !kept {
				t.Fatalf("user %s after purging user 1: job %v, task %v, %d targets, %d results, %d work items", u, jerr, terr, len(targets), len(results), len(work))
			}
		}
	})
}

// firstWriteWins checks a set-if-absent: write(first) reports it took
// effect, write(second) that it did not (the first stands; the caller
// checks what is stored).
func firstWriteWins(t *testing.T, what string, write func(value string) (bool, error), first, second string) {
	t.Helper()
	set1, err := write(first)
	if err != nil {
		t.Fatal(err)
	}
	set2, err := write(second)
	if err != nil {
		t.Fatal(err)
	}
	if !set1 || set2 {
		t.Fatalf("%s: %v then %v, want true then false (the first stands)", what, set1, set2)
	}
}
