package client

import (
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

// WorkStream is an open GET /api/v1/async/agent/events.
type WorkStream struct{ sseReader }

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
	return &WorkStream{sr}, nil
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
// dst holds (the ETag is the file hash: the bytes never change).
func (c *Client) fetchContent(ctx context.Context, taskID, hash string, dst string) (PullResult, error) {
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
		return c.fetchContent(ctx, taskID, hash, dst)
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
	n, err := io.Copy(f, resp.Body)
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
	Cache    string
	Parallel int // deliveries at once; 0 means 4
	Log      *slog.Logger
	// OnResult is told every outcome reported (tests, progress output).
	OnResult func(w async.Work, err error)
}

// RunAgent serves as an async download agent until ctx ends: it streams its
// work, delivers each item (fetch into the shared cache, verified by hash,
// then an atomic copy into <Dir>/<target dir>/<file name>, never outside
// Dir) and reports each outcome. A dropped stream is reopened.
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
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	node := o.ID
	if o.Container != "" {
		node += "." + o.Container
	}
	cacheID, err := cacheIdentity(o.Cache)
	if err != nil {
		return err
	}
	var (
		mu       sync.Mutex
		inFlight = map[string]bool{}
		hashMu   = map[string]*sync.Mutex{} // one fetch of a content at a time in this process
		wg       sync.WaitGroup
		slots    = make(chan struct{}, o.Parallel)
	)
	defer wg.Wait()
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
				break
			}
			mu.Lock()
			busy := inFlight[w.TaskID]
			inFlight[w.TaskID] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					return
				}
				mu.Lock()
				hm := hashMu[w.FileHash]
				if hm == nil {
					hm = &sync.Mutex{}
					hashMu[w.FileHash] = hm
				}
				mu.Unlock()
				hm.Lock()
				err := retryBusy(ctx, func() error { return c.deliver(ctx, root, w, node, cacheID, o) })
				hm.Unlock()
				<-slots
				if ctx.Err() != nil {
					return // stopped mid-way: the server times the target out or hands it again
				}
				rep := apitype.AsyncReport{Agent: o.ID, Container: o.Container, TaskID: w.TaskID, OK: err == nil}
				if err != nil {
					rep.Message = err.Error()
					o.Log.Warn("agent: delivery failed", "task", w.TaskID, "err", err)
				}
				if rerr := retryBusy(context.WithoutCancel(ctx), func() error { return c.AsyncReport(context.WithoutCancel(ctx), rep) }); rerr != nil {
					o.Log.Warn("agent: report", "task", w.TaskID, "err", rerr)
				}
				if o.OnResult != nil {
					o.OnResult(w, err)
				}
				mu.Lock()
				delete(inFlight, w.TaskID)
				mu.Unlock()
			}()
		}
		stream.Close()
	}
	return nil
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
func (c *Client) deliver(ctx context.Context, root *os.Root, w async.Work, node, cacheID string, o AgentOptions) error {
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
			return c.fetchContent(ctx, w.TaskID, w.FileHash, dst)
		}}
	var res SharedPullResult
	cached, refused, err := c.intoSharedCache(ctx, src, SharedPullOptions{Cache: o.Cache, Node: node, Log: o.Log}, &res)
	if err != nil {
		return err
	}
	if refused {
		// No shared transfer (single-node mode): this agent fetches the
		// pinned bytes itself.
		cached = filepath.Join(o.Cache, w.FileHash)
		if ok, err := c.trustCachedNow(ctx, cached, src, o.Log); err != nil {
			return err
		} else if !ok {
			if _, err := c.fetchVerified(ctx, src, cached, privateDL(cached, node)); err != nil {
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
