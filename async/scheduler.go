package async

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"netdisk/errs"
	"netdisk/internal/redishealth"
	"netdisk/lock"
)

// Run runs the scheduler every tick until ctx ends. Errors of one pass are
// logged; the next pass retries.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.tick)
	defer t.Stop()
	var edge redishealth.Edge // failures logged by their edges, not once a tick
	for {
		switch err := s.Tick(ctx); {
		case err == nil:
			edge.OK(ctx, s.log, "async: scheduler passes run again")
		case ctx.Err() == nil:
			edge.Failed(ctx, s.log, slog.LevelWarn, "async: scheduler pass failed", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purger is a store that deletes expired records itself (Embedded).
type purger interface {
	Purge(ctx context.Context, now time.Time) error
}

// Tick is one scheduler pass at the clock's now: every live job is started,
// advanced or finished as the package doc says. It returns the first error
// met, having tried every job.
func (s *Service) Tick(ctx context.Context) error {
	now := s.now()
	if p, ok := s.st.(purger); ok {
		if err := p.Purge(ctx, now); err != nil {
			return err
		}
	}
	ids, err := s.st.Jobs(ctx, now)
	if err != nil {
		return err
	}
	var first error
	byStatus := map[Status]int{}
	for _, id := range ids {
		if err := s.step(ctx, id, now, byStatus); err != nil && !errs.Is(err, errs.NotFound) {
			s.log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "async: job", "job", id, "err", err)
			if first == nil {
				first = err
			}
		}
	}
	s.dropStalePins(ids)
	if first == nil {
		// A pass that stopped short would undercount: the last whole
		// one stands.
		s.mu.Lock()
		s.byStatus = byStatus
		s.mu.Unlock()
	}
	return first
}

// JobsByStatus returns how many live jobs each status had at the last
// whole scheduler pass (jobs are kept a while after they end, so the
// final statuses count those not yet expired).
func (s *Service) JobsByStatus() map[Status]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Status]int, len(s.byStatus))
	for k, v := range s.byStatus {
		out[k] = v
	}
	return out
}

// step advances one job.
func (s *Service) step(ctx context.Context, id string, now time.Time, byStatus map[Status]int) error {
	j, err := s.st.Job(ctx, id, now)
	if err != nil {
		return err
	}
	byStatus[j.Status]++
	switch {
	case j.Status.Final():
		s.unpin(id)
		return nil
	case j.Status == Pending && now.Before(j.WindowEnd):
		return nil // still collecting
	}
	held, err := s.lockJob(ctx, id)
	if err != nil || !held {
		return err // another daemon runs it
	}
	// Read again under the lock: the previous holder may have moved it.
	if j, err = s.st.Job(ctx, id, now); err != nil {
		return err
	}
	switch j.Status {
	case Pending:
		return s.start(ctx, j, now)
	case Running:
		if err := s.ensurePinned(ctx, j); err != nil {
			return err
		}
		if err := s.dispatch(ctx, &j, now); err != nil {
			return err
		}
		if err := s.touch(ctx, j.ID, now); err != nil {
			return err
		}
		return s.check(ctx, j, now)
	}
	s.unlockJob(id)
	return nil
}

func (s *Service) lockJob(ctx context.Context, id string) (bool, error) {
	r, err := s.locks.TryLock(ctx, LockOp, id, s.node)
	if err != nil {
		return false, err
	}
	if r.Status == lock.Queued {
		// Not ours: leave the queue, the holder runs the job (and a dead
		// holder's lease ends, after which the next pass takes it).
		s.locks.Unlock(ctx, LockOp, id, s.node, errors.New("not waiting"))
	}
	return r.Status == lock.Acquired, nil
}

func (s *Service) unlockJob(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.locks.Unlock(ctx, LockOp, id, s.node, nil); err != nil && !errs.Is(err, errs.Conflict) {
		s.log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "async: unlock job", "job", id, "err", err)
	}
}

// start pins the file's version and runs the job.
func (s *Service) start(ctx context.Context, j Job, now time.Time) error {
	n, chunks, unpin, err := s.files.PinVersion(ctx, j.User, j.Path)
	if err != nil {
		if errs.Is(err, errs.NotFound) || errs.Is(err, errs.IsDir) || errs.Is(err, errs.NotDir) {
			// The file went away during the window: nothing to deliver.
			// The message names no path: the job's is the owner's, and
			// recipients of a shared file read it too.
			return s.finishAll(ctx, j, now, Failed, "the file no longer exists (moved, deleted or replaced by a folder)")
		}
		return err
	}
	j.Status, j.Started, j.Deadline = Running, now, now.Add(s.timeout)
	j.FileHash, j.Size, j.Chunks = n.FileHash, n.Size, chunks
	if err := s.st.UpdateJob(ctx, j, now); err != nil {
		unpin()
		return err
	}
	s.mu.Lock()
	if old := s.pins[j.ID]; old != nil {
		old()
	}
	s.pins[j.ID] = unpin
	s.touched[j.ID] = now
	s.mu.Unlock()
	s.log.Info("async: job started", "job", j.ID, "hash", j.FileHash, "size", j.Size)
	return s.dispatch(ctx, &j, now)
}

// dispatch hands the targets not handed yet to their agents.
func (s *Service) dispatch(ctx context.Context, j *Job, now time.Time) error {
	ts, err := s.st.Targets(ctx, j.ID, now)
	if err != nil {
		return err
	}
	if len(ts) <= j.Dispatched {
		return nil
	}
	for _, t := range ts[j.Dispatched:] {
		u, p := t.UserOf(*j), t.PathOf(*j)
		if u != j.User {
			// Through a share: it may have been revoked or left since the
			// request, and the bytes go only to whom it still reaches.
			owner, opath, err := s.files.Resource(ctx, u, p)
			if err != nil && !errs.Is(err, errs.NotFound) {
				return err
			}
			if err != nil || owner != j.User || opath != j.Path {
				if _, err := s.st.SetResult(ctx, j.ID, Result{TaskID: t.TaskID, Status: Failed, Message: "the file is no longer shared with you", Time: now}, now); err != nil {
					return err
				}
				continue
			}
		}
		// The requester's path, never the owner's: the job's ID names the
		// owner's path, so a recipient's agent gets another name of it.
		w := Work{TaskID: t.TaskID, JobID: PublicJobID(u, j.ID), Path: p, FileName: baseName(p), FileHash: j.FileHash, Size: j.Size,
			Agent: t.Agent, Container: t.Container, TargetDir: t.TargetDir, Deadline: j.Deadline}
		if err := s.st.AddWork(ctx, u, w, now); err != nil {
			return err
		}
		s.wake(AgentKey(u, t.Agent, t.Container))
	}
	j.Dispatched = len(ts)
	return s.st.UpdateJob(ctx, *j, now)
}

// touch refreshes a running job's records once per TouchEvery, so that a
// timeout longer than the store's TTL never lets them expire under it.
func (s *Service) touch(ctx context.Context, id string, now time.Time) error {
	s.mu.Lock()
	last, ok := s.touched[id]
	s.mu.Unlock()
	if ok && now.Sub(last) < TouchEvery {
		return nil
	}
	if err := s.st.Touch(ctx, id, now); err != nil {
		return err
	}
	s.mu.Lock()
	s.touched[id] = now
	s.mu.Unlock()
	return nil
}

// deadline is when a running job times out (jobs started before the
// deadline was recorded: their start plus this daemon's timeout).
func (s *Service) deadline(j Job) time.Time {
	if !j.Deadline.IsZero() {
		return j.Deadline
	}
	return j.Started.Add(s.timeout)
}

// check ends the job when every target answered or its time is up. The
// answers are read first: those recorded before the deadline (Report
// records none after it) count, however late this pass runs.
func (s *Service) check(ctx context.Context, j Job, now time.Time) error {
	ts, err := s.st.Targets(ctx, j.ID, now)
	if err != nil {
		return err
	}
	rs, err := s.st.Results(ctx, j.ID, now)
	if err != nil {
		return err
	}
	failed, all := false, true
	for _, t := range ts {
		r, ok := rs[t.TaskID]
		if !ok {
			all = false
			break
		}
		failed = failed || r.Status != Success
	}
	if !all {
		if now.Before(s.deadline(j)) {
			return nil // still waiting
		}
		return s.finishAll(ctx, j, now, Timeout, "no answer within "+s.deadline(j).Sub(j.Started).String())
	}
	j.Status, j.Ended = Success, now
	if failed {
		j.Status = Failed
	}
	return s.end(ctx, j, now)
}

// finishAll marks every target without an outcome st, then ends the job
// with st.
func (s *Service) finishAll(ctx context.Context, j Job, now time.Time, st Status, msg string) error {
	ts, err := s.st.Targets(ctx, j.ID, now)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := s.st.SetResult(ctx, j.ID, Result{TaskID: t.TaskID, Status: st, Message: msg, Time: now}, now); err != nil {
			return err
		}
		if err := s.st.DoneWork(ctx, AgentKey(t.UserOf(j), t.Agent, t.Container), t.TaskID); err != nil {
			return err
		}
	}
	j.Status, j.Ended, j.Message = st, now, msg
	return s.end(ctx, j, now)
}

func (s *Service) end(ctx context.Context, j Job, now time.Time) error {
	if err := s.st.UpdateJob(ctx, j, now); err != nil {
		return err
	}
	s.log.Info("async: job ended", "job", j.ID, "status", j.Status)
	s.unpin(j.ID)
	s.unlockJob(j.ID)
	return nil
}

// ensurePinned pins a running job's recorded version if this daemon does
// not yet (it took the job over after a restart).
func (s *Service) ensurePinned(ctx context.Context, j Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pins[j.ID]; !ok {
		s.pins[j.ID] = s.files.PinChunks(ctx, j.Chunks)
		s.log.Info("async: job resumed", "job", j.ID)
	}
	return nil
}

func (s *Service) unpin(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.touched, id)
	if unpin := s.pins[id]; unpin != nil {
		unpin()
		delete(s.pins, id)
	}
}

// dropStalePins unpins jobs that are gone from the store (expired).
func (s *Service) dropStalePins(live []string) {
	keep := make(map[string]bool, len(live))
	for _, id := range live {
		keep[id] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, unpin := range s.pins {
		if !keep[id] {
			unpin()
			delete(s.pins, id)
		}
	}
	for id := range s.touched {
		if !keep[id] {
			delete(s.touched, id)
		}
	}
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
