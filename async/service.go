package async

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"netdisk/errs"
	"netdisk/internal/zero"
	"netdisk/lock"
	"netdisk/meta"
	"netdisk/vpath"
)

// Files is what the service needs of the drive.
type Files interface {
	// Stat returns the user's file at p (errs.NotFound when there is none).
	Stat(ctx context.Context, uid int64, p string) (meta.Node, error)
	// PinVersion returns the current version of the user's file p with its
	// chunks, kept from garbage collection until unpin is called.
	PinVersion(ctx context.Context, uid int64, p string) (n meta.Node, chunks []meta.FileChunk, unpin func(), err error)
	// PinChunks keeps a recorded version's chunks until unpin is called.
	PinChunks(ctx context.Context, chunks []meta.FileChunk) (unpin func())
	// Resource names the user's file at p in the tree it lies in: through
	// a share, the owner's id and path.
	Resource(ctx context.Context, uid int64, p string) (owner int64, path string, err error)
}

// Config wires a Service.
type Config struct {
	Store   Store
	Files   Files
	Locks   *lock.Manager // the job locks; nil means an in-process manager
	Node    string        // this daemon's name in the job locks; random when empty
	Window  time.Duration // 0 means DefaultWindow; whole seconds
	Tick    time.Duration // 0 means DefaultTick
	Timeout time.Duration // 0 means DefaultTimeout
	Now     func() time.Time
	Log     *slog.Logger
}

// Service creates tasks, runs the scheduler and answers agents (see the
// package doc).
type Service struct {
	st      Store
	files   Files
	locks   *lock.Manager
	ownLock bool
	node    lock.Node
	window  time.Duration
	tick    time.Duration
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu       sync.Mutex
	pins     map[string]func()                     // job ID → unpin, for the jobs this daemon runs
	touched  map[string]time.Time                  // job ID → when this daemon last refreshed its records
	waiters  map[string]map[chan struct{}]struct{} // agent key → wake channels
	byStatus map[Status]int                        // live jobs at the last whole pass (JobsByStatus)
}

// New returns a service; Close releases its pins (and its own lock manager).
func New(ctx context.Context, c Config) (*Service, error) {
	zero.OrDefault(&c.Window, DefaultWindow)
	if c.Window%time.Second != 0 {
		return nil, fmt.Errorf("async: the window must be whole seconds, not %v", c.Window)
	}
	zero.OrDefault(&c.Tick, DefaultTick)
	zero.OrDefault(&c.Timeout, DefaultTimeout)
	c.Now, c.Log = zero.Clock(c.Now), zero.Logger(c.Log)
	if c.Node == "" {
		c.Node = "daemon-" + randomID()[:12]
	}
	s := &Service{st: c.Store, files: c.Files, locks: c.Locks, window: c.Window, tick: c.Tick, timeout: c.Timeout,
		now: c.Now, log: c.Log, node: lock.Node{User: "async", ID: c.Node},
		pins: map[string]func(){}, touched: map[string]time.Time{}, waiters: map[string]map[chan struct{}]struct{}{}}
	if s.locks == nil {
		m, err := lock.NewManager(ctx, lock.Config{Now: c.Now, Log: c.Log})
		if err != nil {
			return nil, err
		}
		s.locks, s.ownLock = m, true
	}
	return s, nil
}

// Close unpins the versions of the jobs this daemon runs.
func (s *Service) Close() {
	s.mu.Lock()
	for id, unpin := range s.pins {
		unpin()
		delete(s.pins, id)
	}
	s.mu.Unlock()
	if s.ownLock {
		s.locks.Close()
	}
}

// Window is the collection window.
func (s *Service) Window() time.Duration { return s.window }

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Request asks for one delivery.
type Request struct {
	User      int64
	Path      string // the user's file
	Agent     string
	Container string
	TargetDir string // relative to the agent's root
	// WaitForAgent accepts an agent that never opened its work stream (it
	// will be started later); otherwise such a target is refused.
	WaitForAgent bool
}

var nameRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// Add creates the task of r in the job of its file and the current window
// and returns it. A path that is no file of the user's, or an agent the
// user never ran (unless r.WaitForAgent), is errs.NotFound at once; bad
// names are errs.Invalid.
func (s *Service) Add(ctx context.Context, r Request) (Task, error) {
	const op = "async.Add"
	if !nameRe.MatchString(r.Agent) {
		return Task{}, errs.Errorf(op, errs.Invalid, "agent: want 1–128 of A-Z a-z 0-9 . _ -")
	}
	if r.Container != "" && !nameRe.MatchString(r.Container) {
		return Task{}, errs.Errorf(op, errs.Invalid, "container: want 1–128 of A-Z a-z 0-9 . _ -")
	}
	dir, err := vpath.CleanRel(r.TargetDir)
	if err != nil {
		return Task{}, errs.Errorf(op, errs.Invalid, "targetDir: %w", err)
	}
	p, err := vpath.Clean(r.Path)
	if err != nil {
		return Task{}, errs.E(op, errs.Invalid, r.Path, err)
	}
	n, err := s.files.Stat(ctx, r.User, p)
	if err != nil {
		return Task{}, err
	}
	if n.IsDir {
		return Task{}, errs.E(op, errs.IsDir, p, errors.New("async downloads deliver files"))
	}
	if n.IsSymlink() {
		// Never followed by the server, a link has no bytes to deliver.
		return Task{}, errs.E(op, errs.Invalid, p, errors.New("async downloads deliver files, not symbolic links"))
	}
	now := s.now()
	if !r.WaitForAgent {
		known, err := s.st.KnownAgent(ctx, AgentKey(r.User, r.Agent, r.Container), now)
		if err != nil {
			return Task{}, err
		}
		if !known {
			name := r.Agent
			if r.Container != "" {
				name += " (container " + r.Container + ")"
			}
			return Task{}, errs.Errorf(op, errs.NotFound, "no agent %s of yours has connected; start it first or ask to wait for it", name)
		}
	}
	// The job is the owner's file's: requests for a shared file, from its
	// owner or any recipient, become one job. Each target keeps its
	// requester and their path, the only path their agent is given.
	owner, opath, err := s.files.Resource(ctx, r.User, p)
	if err != nil {
		return Task{}, err
	}
	task := Task{ID: TaskKey(r.User, p, randomID()), User: r.User, Path: p, FileName: path.Base(p),
		Agent: r.Agent, Container: r.Container, TargetDir: dir, Created: now}
	// The current window's job, or the next one's if this one started
	// already (a clock ahead of ours on another daemon): a target is never
	// added to a job past collecting.
	b := Bucket(now, s.window)
	for try := 0; ; try++ {
		id := JobKey(owner, opath, b)
		job := Job{ID: id, User: owner, Path: opath, Bucket: b, WindowEnd: WindowEnd(b, s.window), Status: Pending, Created: now}
		task.JobID = id
		target := Target{TaskID: task.ID, Agent: r.Agent, Container: r.Container, TargetDir: dir}
		if r.User != owner {
			target.User, target.Path = r.User, p
		}
		added, err := s.addTo(ctx, job, target, task, now)
		if err != nil {
			return Task{}, err
		}
		if added {
			return task, nil
		}
		if try >= 3 {
			return Task{}, errs.Errorf(op, errs.Unavailable, "job %s is past collecting", id)
		}
		b++
	}
}

// addTo adds the task to job j, creating it if needed, in one step of the
// store; false when the live job is past collecting (the task belongs to a
// later window's job).
func (s *Service) addTo(ctx context.Context, j Job, t Target, task Task, now time.Time) (bool, error) {
	_, st, err := s.st.AddTask(ctx, j, t, task, now)
	return err == nil && st == Pending, err
}

// TaskStatus is a task with its current status.
type TaskStatus struct {
	Task
	Status  Status
	Message string
	// Bytes of Size delivered, while Downloading.
	Bytes, Size int64
}

// Status returns the user's task id and its status; errs.NotFound for a
// missing, expired or other user's task.
func (s *Service) Status(ctx context.Context, uid int64, id string) (TaskStatus, error) {
	now := s.now()
	t, err := s.userTask(ctx, "async.Status", uid, id, now)
	if err != nil {
		return TaskStatus{}, err
	}
	ts := TaskStatus{Task: t, Status: Pending}
	j, err := s.st.Job(ctx, t.JobID, now)
	if errs.Is(err, errs.NotFound) {
		return ts, errs.Errorf("async.Status", errs.NotFound, "the task's job expired")
	}
	if err != nil {
		return TaskStatus{}, err
	}
	rs, err := s.st.Results(ctx, j.ID, now)
	if err != nil {
		return TaskStatus{}, err
	}
	switch r, ok := rs[t.ID]; {
	case ok:
		ts.Status, ts.Message = r.Status, r.Message
	case j.Status == Pending:
		ts.Status = Pending
	case j.Status == Running:
		ts.Status = Running
		ps, err := s.st.Progress(ctx, j.ID, now)
		if err != nil {
			return TaskStatus{}, err
		}
		if p, ok := ps[t.ID]; ok {
			ts.Status, ts.Bytes, ts.Size = Downloading, min(p.Bytes, j.Size), j.Size
		}
	default:
		// An ended job has an outcome for every target it handed out; a
		// target without one was pushed after the job ended (records
		// written before the add became one step) and never delivered: the
		// job's status is not its own.
		ts.Status, ts.Message = Failed, "not delivered: added after its job ended"
	}
	return ts, nil
}

// Job returns a job (for tests and the benchmark).
func (s *Service) Job(ctx context.Context, id string) (Job, error) { return s.st.Job(ctx, id, s.now()) }

// Work lists the items handed to an agent and not answered yet.
func (s *Service) Work(ctx context.Context, uid int64, agent, container string) ([]Work, error) {
	return s.st.Work(ctx, AgentKey(uid, agent, container), s.now())
}

// Wait returns a channel that receives when work is handed to the agent on
// this daemon, and a function to stop waiting. Agents' streams also
// re-read Work on their own (work handed by another daemon).
func (s *Service) Wait(uid int64, agent, container string) (<-chan struct{}, func()) {
	k := AgentKey(uid, agent, container)
	c := make(chan struct{}, 1)
	s.mu.Lock()
	set := s.waiters[k]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		s.waiters[k] = set
	}
	set[c] = struct{}{}
	s.mu.Unlock()
	return c, func() {
		s.mu.Lock()
		delete(s.waiters[k], c)
		if len(s.waiters[k]) == 0 {
			delete(s.waiters, k)
		}
		s.mu.Unlock()
	}
}

func (s *Service) wake(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.waiters[k] {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// Agents lists the agent keys with a stream open on this daemon.
func (s *Service) Agents(uid int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	prefix := strconv.FormatInt(uid, 10) + ":"
	var out []string
	for k := range s.waiters {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// userTask returns the task taskID when it is the user's; another user's
// task is as missing as one that never was.
func (s *Service) userTask(ctx context.Context, op string, uid int64, taskID string, now time.Time) (Task, error) {
	t, err := s.st.Task(ctx, taskID, now)
	if err != nil {
		return Task{}, err
	}
	if t.User != uid {
		return Task{}, errs.Errorf(op, errs.NotFound, "no such task")
	}
	return t, nil
}

// agentTask returns the task taskID when it is the agent's.
func (s *Service) agentTask(ctx context.Context, op string, uid int64, agent, container, taskID string, now time.Time) (Task, error) {
	t, err := s.st.Task(ctx, taskID, now)
	if err != nil {
		return Task{}, err
	}
	if t.User != uid || t.Agent != agent || t.Container != container {
		return Task{}, errs.Errorf(op, errs.NotFound, "no such task for this agent")
	}
	return t, nil
}

// Seen records that the agent opened its work stream: targets naming it
// are accepted from now on (Add).
func (s *Service) Seen(ctx context.Context, uid int64, agent, container string) error {
	return s.st.SeenAgent(ctx, AgentKey(uid, agent, container), s.now())
}

// Progress records that the agent has delivered bytes of one of its
// targets so far (0: it started). Only the agent the target names may
// report (errs.NotFound otherwise); progress of a job that is not running
// is ignored.
func (s *Service) Progress(ctx context.Context, uid int64, agent, container, taskID string, bytes int64) error {
	const op = "async.Progress"
	now := s.now()
	t, err := s.agentTask(ctx, op, uid, agent, container, taskID, now)
	if err != nil {
		return err
	}
	if bytes < 0 {
		return errs.Errorf(op, errs.Invalid, "bytes: want 0 or more")
	}
	j, err := s.st.Job(ctx, t.JobID, now)
	if err != nil {
		return err
	}
	if j.Status != Running {
		return nil
	}
	return s.st.SetProgress(ctx, j.ID, Progress{TaskID: taskID, Bytes: bytes, Time: now}, now)
}

// Report records an agent's outcome for one of its targets: ok or failed
// with a message. Only the agent the target names may answer
// (errs.NotFound otherwise); an outcome after the target's first one, or
// at or after the job's deadline, changes nothing.
func (s *Service) Report(ctx context.Context, uid int64, agent, container, taskID string, ok bool, msg string) error {
	const op = "async.Report"
	now := s.now()
	t, err := s.agentTask(ctx, op, uid, agent, container, taskID, now)
	if err != nil {
		return err
	}
	j, err := s.st.Job(ctx, t.JobID, now)
	if err != nil {
		return err
	}
	if j.Status != Running || !now.Before(s.deadline(j)) {
		// Ended (or never started: no work was handed out): the target's
		// status is settled without this answer.
		return s.st.DoneWork(ctx, AgentKey(uid, agent, container), taskID)
	}
	st := Success
	if !ok {
		st = Failed
	}
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	if _, err := s.st.SetResult(ctx, t.JobID, Result{TaskID: taskID, Status: st, Message: msg, Time: now}, now); err != nil {
		return err
	}
	return s.st.DoneWork(ctx, AgentKey(uid, agent, container), taskID)
}

// Content returns the pinned version a task's agent fetches: the job's
// node and chunks. errs.NotFound unless the job runs and the task is the
// user's.
func (s *Service) Content(ctx context.Context, uid int64, taskID string) (Job, error) {
	now := s.now()
	t, err := s.userTask(ctx, "async.Content", uid, taskID, now)
	if err != nil {
		return Job{}, err
	}
	j, err := s.st.Job(ctx, t.JobID, now)
	if err != nil {
		return Job{}, err
	}
	if j.Status != Running || j.FileHash == "" {
		return Job{}, errs.Errorf("async.Content", errs.NotFound, "the task's job is not running")
	}
	return j, nil
}

// PurgeOwner ends every async record of user: their account is being
// deleted, and nothing of it is to be run or handed out any more.
func (s *Service) PurgeOwner(ctx context.Context, user int64) error {
	return s.st.PurgeOwner(ctx, user)
}
