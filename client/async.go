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
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/internal/atomicfile"
	"netdisk/vpath"
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
func (s *WorkStream) Next() (apitype.AsyncWork, error) {
	_, data, err := s.next()
	if err != nil {
		return apitype.AsyncWork{}, err
	}
	var w apitype.AsyncWork
	if err := json.Unmarshal([]byte(data), &w); err != nil {
		return apitype.AsyncWork{}, fmt.Errorf("async work event: %w", err)
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

// deliver brings one item into the cache and copies it into place.
func (c *Client) deliver(ctx context.Context, root *os.Root, w apitype.AsyncWork, node, cacheID string, o AgentOptions, progress func(int64)) error {
	name := w.FileName
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("bad file name %q", name)
	}
	dir, err := vpath.CleanRel(w.TargetDir)
	if err != nil {
		return fmt.Errorf("targetDir: %w", err)
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

// placeInRoot copies cached to rel under root atomically and durably
// (atomicfile.WriteIn). root refuses any path that leaves it, through ".."
// or a symlink.
func placeInRoot(root *os.Root, cached, rel string) error {
	src, err := os.Open(cached)
	if err != nil {
		return err
	}
	defer src.Close()
	return atomicfile.WriteIn(root, rel, 0o644, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	})
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
