package client

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"netdisk/apitype"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"netdisk/async"
)

// Async downloads (seed 002, docs/API.md "Async downloads"): the requester's
// calls (AsyncAdd, AsyncStatus) and the agent's (RunAgent).

// AsyncAdd asks the daemon to deliver the user's file to an agent's target
// directory; the answer holds the task ID.
func (c *Client) AsyncAdd(ctx context.Context, req apitype.AsyncAdd) (apitype.AsyncTask, error) {
	var t apitype.AsyncTask
	err := c.JSON(ctx, http.MethodPost, "/api/v1/async/tasks", nil, req, &t)
	return t, err
}

// AsyncStatus returns a task's status and job.
func (c *Client) AsyncStatus(ctx context.Context, taskID string) (apitype.AsyncTask, error) {
	var t apitype.AsyncTask
	err := c.JSON(ctx, http.MethodGet, "/api/v1/async/task", url.Values{"id": {taskID}}, nil, &t)
	return t, err
}

// AsyncReport answers one of the agent's targets.
func (c *Client) AsyncReport(ctx context.Context, r apitype.AsyncReport) error {
	return c.JSON(ctx, http.MethodPost, "/api/v1/async/agent/report", nil, r, nil)
}

// AsyncProgress tells how far the agent is with one of its targets.
func (c *Client) AsyncProgress(ctx context.Context, p apitype.AsyncProgress) error {
	return c.JSON(ctx, http.MethodPost, "/api/v1/async/agent/progress", nil, p, nil)
}

// WorkStream is an open GET /api/v1/async/agent/events.
type WorkStream struct{ sseReader }

// workStreamIdle ends a work stream that has received nothing, not even
// the daemon's keep-alive (every few seconds), for this long: a connection
// lost without a reset (a dead peer, a NAT forgetting it) would otherwise
// block the agent forever instead of reconnecting.
const workStreamIdle = time.Minute

// AsyncWork opens the agent's work stream.
func (c *Client) AsyncWork(ctx context.Context, agent, container string) (*WorkStream, error) {
	q := url.Values{"agent": {agent}}
	if container != "" {
		q.Set("container", container)
	}
	sr, err := c.openSSE(ctx, "/api/v1/async/agent/events", q, "async work")
	if err != nil {
		return nil, err
	}
	ib := &idleBody{rc: sr.body}
	ib.timer = time.AfterFunc(workStreamIdle, func() { sr.body.Close() })
	return &WorkStream{sseReader{body: ib, r: bufio.NewReader(ib)}}, nil
}

// idleBody closes its body when no read returned anything for
// workStreamIdle.
type idleBody struct {
	rc    io.ReadCloser
	timer *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(workStreamIdle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}

// Next returns the next work item; an error means the stream ended.
func (s *WorkStream) Next() (async.Work, error) {
	_, data, err := s.next()
	if err != nil {
		return async.Work{}, err
	}
	var w async.Work
	if err := json.Unmarshal([]byte(data), &w); err != nil {
		return async.Work{}, fmt.Errorf("async work event: %w", err)
	}
	return w, nil
}

// fetchContent downloads a task's pinned content to dst, resuming from what
// dst holds (the ETag is the file hash: the bytes never change). progress,
// if not nil, is told the bytes dst holds as they arrive.
func (c *Client) fetchContent(ctx context.Context, taskID, hash string, dst string, progress func(int64)) (PullResult, error) {
	var res PullResult
	var offset int64
	if st, err := os.Stat(dst); err == nil {
		offset = st.Size()
	}
	req, err := c.NewRequest(ctx, http.MethodGet, "/api/v1/async/agent/content", url.Values{"task": {taskID}}, nil)
	if err != nil {
		return res, err
	}
	if offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		req.Header.Set("If-Range", strconv.Quote(hash))
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return res, fmt.Errorf("server %s unreachable: %w", c.Server, err)
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY
	switch resp.StatusCode {
	case http.StatusPartialContent:
		flags |= os.O_APPEND
		res.Resumed = offset
	case http.StatusOK:
		flags |= os.O_TRUNC
	case http.StatusRequestedRangeNotSatisfiable:
		os.Remove(dst) // longer than the content: start over
		return c.fetchContent(ctx, taskID, hash, dst, progress)
	default:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		e := &Error{Status: resp.StatusCode, Body: b, Message: strings.TrimSpace(string(b))}
		var eb struct{ Error string }
		if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
			e.Message = eb.Error
		}
		return res, e
	}
	f, err := os.OpenFile(dst, flags, 0o644)
	if err != nil {
		return res, err
	}
	defer f.Close()
	var w io.Writer = f
	if progress != nil {
		base := res.Resumed
		w = &countingWriter{w: f, add: func(n int64) { progress(base + n) }}
	}
	n, err := io.Copy(w, resp.Body)
	res.Bytes = n
	if err != nil {
		return res, fmt.Errorf("fetch %s: %w", taskID, err)
	}
	if err := f.Sync(); err != nil {
		return res, err
	}
	res.Files = 1
	return res, f.Close()
}

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
	OnResult func(w async.Work, err error)
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

func (a *agent) deliverAndReport(ctx context.Context, w async.Work) {
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
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		var told int64
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if n := latest.Load(); n != told {
					told = n
					a.progress(ctx, taskID, n)
				}
			}
		}
	}()
	return latest.Store, func() { close(done); <-exited }
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

// deliver brings one item into the cache and copies it into place.
func (c *Client) deliver(ctx context.Context, root *os.Root, w async.Work, node, cacheID string, o AgentOptions, progress func(int64)) error {
	name := w.FileName
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("bad file name %q", name)
	}
	dir, err := async.CleanTargetDir(w.TargetDir)
	if err != nil {
		return err
	}
	if !isFileHash(w.FileHash) {
		return fmt.Errorf("bad file hash %q", w.FileHash) // it names a file in the cache
	}
	// The pull lock is the cache folder's (agents sharing it share one
	// transfer), not the content's: agents on other hosts, with caches of
	// their own, do not wait for this one.
	src := sharedSource{hash: w.FileHash, size: w.Size, lockPath: w.Path,
		resource: PathResource("/.agent-cache/" + cacheID + "/" + w.FileHash),
		fetch: func(ctx context.Context, dst string) (PullResult, error) {
			return c.fetchContent(ctx, w.TaskID, w.FileHash, dst, progress)
		}}
	var res SharedPullResult
	cached, refused, err := c.intoSharedCache(ctx, src, SharedPullOptions{Cache: o.Cache, Node: node}, &res)
	if err != nil {
		return err
	}
	if refused {
		// No shared transfer (single-node mode): this agent fetches the
		// pinned bytes itself.
		cached = filepath.Join(o.Cache, w.FileHash)
		if !cachedOK(cached, w.Size) {
			if _, err := c.fetchVerified(ctx, src, cached, cached+"."+node+".dl"); err != nil {
				return err
			}
		}
	}
	return placeInRoot(root, cached, path.Join(dir, name))
}

// placeInRoot copies cached to rel under root atomically: a temp file in the
// target directory, fsync, rename, directory fsync. root refuses any path
// that leaves it, through ".." or a symlink.
func placeInRoot(root *os.Root, cached, rel string) error {
	dir := path.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src, err := os.Open(cached)
	if err != nil {
		return err
	}
	defer src.Close()
	b := make([]byte, 6)
	rand.Read(b)
	tmp := path.Join(dir, "."+path.Base(rel)+"."+hex.EncodeToString(b)+".tmp")
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if _, err := io.Copy(f, src); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := root.Rename(tmp, rel); err != nil {
		return err
	}
	ok = true
	if d, err := root.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// cacheIdentity returns the cache folder's ID, created by the first agent
// to use it (written to a temp file, then linked into place: whoever links
// first wins, the others read the winner's).
func cacheIdentity(cache string) (string, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(cache, ".cache-id")
	if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 12)
	rand.Read(b)
	tmp, err := os.CreateTemp(cache, ".cache-id.*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(b)); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	id, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(id)), nil
}

func isFileHash(h string) bool {
	if len(h) != 32 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
