package client

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"netdisk/apitype"
	"netdisk/internal/tick"
	"netdisk/internal/tlsconf"
)

// The agent of async downloads (`netdisk agent`): RunAgent and how it keeps
// and reports its outcomes.

// AgentOptions configure RunAgent.
type AgentOptions struct {
	ID        string // the agent's name among the user's agents
	Container string // optional: the container this agent serves
	Dir       string // the root every target directory is under
	// Cache is the folder agents on one host share: a file is transferred
	// once into it (under the pull lock of its content) and copied out to
	// each target. "" means <Dir>/.netdisk-cache (no sharing).
	Cache string
	// State is the agent's own folder: the outcomes not yet taken by the
	// daemon are kept there, so a restarted agent sends them again. ""
	// means <Dir>/.netdisk-agent; two agents never share one.
	State    string
	Parallel int // deliveries at once; 0 means 4
	Log      *slog.Logger
	// OnResult is told every outcome once it is delivered (tests, progress
	// output), before it is reported.
	OnResult func(w apitype.AsyncWork, err error)
	// OnReported is told every outcome the daemon took (tests).
	OnReported func(taskID string)
}

// Retries of an outcome's report: from reportBackoff doubling to
// reportMaxBackoff, until the job's deadline (plus reportGrace for the
// clocks' difference), or reportNoDeadline when the work named none.
const (
	reportBackoff    = 500 * time.Millisecond
	reportMaxBackoff = 15 * time.Second
	reportGrace      = time.Minute
	reportNoDeadline = 10 * time.Minute
)

// agent is one RunAgent: its deliveries and its outcomes' reports.
type agent struct {
	c       *Client
	o       AgentOptions
	root    *os.Root
	node    string
	cacheID string
	journal *outcomeJournal

	mu       sync.Mutex
	inFlight map[string]chan struct{} // task ID → a kick for its pending report (nil while delivering)
	hashMu   map[string]*sync.Mutex   // one fetch of a content at a time in this process
	wg       sync.WaitGroup
	slots    chan struct{}
}

// RunAgent serves as an async download agent until ctx ends: it streams its
// work, delivers each item (fetch into the shared cache, verified by hash,
// then an atomic copy into <Dir>/<target dir>/<file name>, never outside
// Dir) and reports each outcome. An outcome is written to the state folder
// before it is reported and kept until the daemon has it: its report is
// retried (with backoff, until the job's deadline) while the daemon or its
// store is away, and sent again by a restarted agent. A dropped or silent
// stream is reopened, and the daemon offers the unanswered items again.
func (c *Client) RunAgent(ctx context.Context, o AgentOptions) error {
	if o.ID == "" || o.Dir == "" {
		return errors.New("agent: an ID and a directory are needed")
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Cache == "" {
		o.Cache = filepath.Join(o.Dir, ".netdisk-cache")
	}
	if o.State == "" {
		o.State = filepath.Join(o.Dir, ".netdisk-agent")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	a := &agent{c: c, o: o, root: root, node: o.ID, inFlight: map[string]chan struct{}{},
		hashMu: map[string]*sync.Mutex{}, slots: make(chan struct{}, o.Parallel)}
	if o.Container != "" {
		a.node += "." + o.Container
	}
	if a.cacheID, err = cacheIdentity(o.Cache); err != nil {
		return err
	}
	if a.journal, err = openOutcomeJournal(filepath.Join(o.State, "outcomes")); err != nil {
		return err
	}
	defer a.wg.Wait()
	// The outcomes a previous run could not hand over.
	pending, err := a.journal.load()
	if err != nil {
		return err
	}
	for _, out := range pending {
		if a.claim(out.Report.TaskID) {
			a.startReport(ctx, out)
		}
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := c.AsyncWork(ctx, o.ID, o.Container)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if s := StatusOf(err); s == http.StatusUnauthorized || s == http.StatusBadRequest || s == http.StatusForbidden {
				return err
			}
			if tlsconf.IsCertError(err) {
				// Not the daemon away: the agent's own settings refuse it,
				// and no retry changes them.
				return err
			}
			o.Log.Warn("agent: work stream", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		o.Log.Info("agent: registered", "agent", o.ID, "container", o.Container)
		for {
			w, err := stream.Next()
			if err != nil {
				if ctx.Err() == nil {
					o.Log.Warn("agent: work stream ended, reconnecting", "err", err)
				}
				break
			}
			if !a.claim(w.TaskID) {
				continue // being delivered, or its outcome is being reported (kicked)
			}
			a.wg.Add(1)
			go func() {
				defer a.wg.Done()
				a.deliverAndReport(ctx, w)
			}()
		}
		stream.Close()
	}
	return nil
}

// claim marks a task as this agent's to deliver or report; false when it
// is already, in which case a waiting report is retried at once (the
// daemon offering the item again is a sign it is back).
func (a *agent) claim(taskID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if kick, busy := a.inFlight[taskID]; busy {
		if kick != nil {
			select {
			case kick <- struct{}{}:
			default:
			}
		}
		return false
	}
	a.inFlight[taskID] = nil
	return true
}

func (a *agent) release(taskID string) {
	a.mu.Lock()
	delete(a.inFlight, taskID)
	a.mu.Unlock()
}

func (a *agent) deliverAndReport(ctx context.Context, w apitype.AsyncWork) {
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		a.release(w.TaskID)
		return
	}
	a.mu.Lock()
	hm := a.hashMu[w.FileHash]
	if hm == nil {
		hm = &sync.Mutex{}
		a.hashMu[w.FileHash] = hm
	}
	a.mu.Unlock()
	hm.Lock()
	a.progress(ctx, w.TaskID, 0)
	setProgress, stopProgress := a.watchProgress(ctx, w.TaskID)
	err := retryBusy(ctx, func() error { return a.c.deliver(ctx, a.root, w, a.node, a.cacheID, a.o, setProgress) })
	stopProgress()
	hm.Unlock()
	<-a.slots
	if ctx.Err() != nil {
		a.release(w.TaskID)
		return // stopped mid-way: the daemon hands the target again or times it out
	}
	rep := apitype.AsyncReport{Agent: a.o.ID, Container: a.o.Container, TaskID: w.TaskID, OK: err == nil}
	if err != nil {
		rep.Message = err.Error()
		a.o.Log.Warn("agent: delivery failed", "task", w.TaskID, "err", err)
	}
	if a.o.OnResult != nil {
		a.o.OnResult(w, err)
	}
	until := w.Deadline
	if until.IsZero() {
		until = time.Now().Add(reportNoDeadline)
	}
	out := outcome{Report: rep, Until: until.Add(reportGrace)}
	if jerr := a.journal.put(out); jerr != nil {
		// Reported all the same, only not kept across a restart.
		a.o.Log.Warn("agent: keep outcome", "task", w.TaskID, "err", jerr)
	}
	a.report(ctx, out)
}

// startReport reports a kept outcome in the background.
func (a *agent) startReport(ctx context.Context, out outcome) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		a.report(ctx, out)
	}()
}

// report sends an outcome until the daemon takes it, refuses it for good
// (the task is gone or not this agent's), or its time is up; then it is
// dropped from the journal. Stopping the agent leaves it there.
func (a *agent) report(ctx context.Context, out outcome) {
	id := out.Report.TaskID
	kick := make(chan struct{}, 1)
	a.mu.Lock()
	a.inFlight[id] = kick
	a.mu.Unlock()
	defer a.release(id)
	wait := reportBackoff
	for {
		err := a.c.AsyncReport(ctx, out.Report)
		if ctx.Err() != nil {
			return
		}
		if err == nil || !retryableReport(err) {
			if err != nil {
				a.o.Log.Warn("agent: report refused", "task", id, "err", err)
			} else if a.o.OnReported != nil {
				a.o.OnReported(id)
			}
			break
		}
		if !time.Now().Before(out.Until) {
			a.o.Log.Warn("agent: report not taken before the job's deadline", "task", id, "err", err)
			break
		}
		a.o.Log.Warn("agent: report failed, will retry", "task", id, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-time.After(wait):
		}
		wait = min(wait*2, reportMaxBackoff)
	}
	if err := a.journal.drop(id); err != nil {
		a.o.Log.Warn("agent: drop outcome", "task", id, "err", err)
	}
}

// retryableReport tells whether a report may succeed later: the daemon or
// its store unreachable or busy (no answer, 5xx, 408, 429); any other
// answer is final.
func retryableReport(err error) bool {
	s := StatusOf(err)
	return s == 0 || s >= 500 || s == http.StatusTooManyRequests || s == http.StatusRequestTimeout
}

// progress tells the daemon how far a delivery is; it is best effort (a
// lost progress report only leaves the status behind).
func (a *agent) progress(ctx context.Context, taskID string, bytes int64) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.c.AsyncProgress(pctx, apitype.AsyncProgress{Agent: a.o.ID, Container: a.o.Container, TaskID: taskID, Bytes: bytes}); err != nil && ctx.Err() == nil {
		a.o.Log.Debug("agent: progress", "task", taskID, "err", err)
	}
}

// progressEvery is how often a delivery's progress is told, when it moved.
const progressEvery = time.Second

// watchProgress tells the daemon every progressEvery how many bytes of the
// task have arrived (set through the returned function) until stop.
func (a *agent) watchProgress(ctx context.Context, taskID string) (set func(int64), stop func()) {
	var latest atomic.Int64
	// stop ends the ticks, not a report under way: that one is waited for.
	ticks, stopTicks := context.WithCancel(ctx)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var told int64
		tick.Every(ticks, progressEvery, func(context.Context) {
			if n := latest.Load(); n != told {
				told = n
				a.progress(ctx, taskID, n)
			}
		})
	}()
	return latest.Store, func() { stopTicks(); <-exited }
}

// retryBusy runs f again (up to 5 times, 1 s apart) while the daemon
// answers 429 or 503: the sign-in throttle counts attempts in flight, so
// many agents of one user on one address starting at once can be told to
// wait a second, and a daemon restarting answers 503 for a moment.
func retryBusy(ctx context.Context, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		s := StatusOf(err)
		if err == nil || attempt == 4 || (s != http.StatusTooManyRequests && s != http.StatusServiceUnavailable) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
