package api

import (
	"net/http"
	"regexp"
	"strconv"
	"time"

	"netdisk/apitype"
	"netdisk/async"
	"netdisk/dav"
	"netdisk/errs"
	"netdisk/meta"
)

// The async download endpoints (seed 002, docs/API.md "Async downloads"): a
// user asks for one of their files to be delivered to one of their agents,
// and reads the task's status; agents (logged in as the user) stream their
// work, fetch the job's pinned content and report per task. Every call is
// scoped to the caller: another user's task, job or agent is answered as
// missing.

// DefaultAsyncRecheck is how often an agent's work stream re-reads its work
// (work handed by another daemon sharing the store wakes no stream here).
const DefaultAsyncRecheck = 2 * time.Second

// asyncReofferEvery is how many rechecks an open work stream waits before it
// sends an unanswered item again: an agent that lost an item (or its
// answer) gets it back without reconnecting, and one still delivering it
// ignores the repeat.
const asyncReofferEvery = 10

func (a *API) asyncRoutes() []Route {
	running := func() bool { return a.Async != nil }
	return a.serviceRoutes(running, "api.async", "async downloads are not enabled on this server", []Route{
		{Pattern: "POST /api/v1/async/tasks", Handler: a.asyncAdd},
		{Pattern: "GET /api/v1/async/task", Handler: a.asyncStatus},
		{Pattern: "GET /api/v1/async/agents", Handler: a.asyncAgents},
		{Pattern: "GET /api/v1/async/agent/events", Handler: a.asyncEvents},
		{Pattern: "GET /api/v1/async/agent/content", Handler: a.asyncContent},
		{Pattern: "POST /api/v1/async/agent/report", Handler: a.asyncReport},
		{Pattern: "POST /api/v1/async/agent/progress", Handler: a.asyncProgress},
	})
}

func (a *API) asyncAdd(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.AsyncAdd
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	t, err := a.Async.Add(r.Context(), async.Request{User: u.ID, Path: req.Path, Agent: req.Agent, Container: req.Container,
		TargetDir: req.TargetDir, WaitForAgent: req.WaitForAgent})
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, async.WireOf(async.TaskStatus{Task: t, Status: async.Pending}))
}

func (a *API) asyncStatus(w http.ResponseWriter, r *http.Request, u meta.User) {
	ts, err := a.Async.Status(r.Context(), u.ID, r.URL.Query().Get("id"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, async.WireOf(ts))
}

func (a *API) asyncAgents(w http.ResponseWriter, r *http.Request, u meta.User) {
	WriteJSON(w, http.StatusOK, map[string]any{"agents": a.Async.Agents(u.ID)})
}

func agentOf(q interface{ Get(string) string }) (agent, container string) {
	return q.Get("agent"), q.Get("container")
}

// asyncEvents streams the agent's work as Server-Sent Events ("work", data
// apitype.AsyncWork): first what is handed to it now, then what comes; an item
// still unanswered is sent again every asyncReofferEvery rechecks, and a
// reconnecting agent gets every unanswered item at once. Opening the stream
// registers the agent (async.Service.Seen).
func (a *API) asyncEvents(w http.ResponseWriter, r *http.Request, u meta.User) {
	agent, container := agentOf(r.URL.Query())
	if !validAgent(agent, container) {
		a.WriteError(w, r, errs.Errorf("api.async", errs.Invalid, "agent and container: 1–128 of A-Z a-z 0-9 . _ -"))
		return
	}
	if err := a.Async.Seen(r.Context(), u.ID, agent, container); err != nil {
		// Refused rather than streamed: an agent that cannot be registered
		// would be refused as a target; it retries the stream.
		a.WriteError(w, r, err)
		return
	}
	s, ok := a.newSSE(w, r, "api.async")
	if !ok {
		return
	}
	// Wait before the first read: work handed between the two is not missed.
	wake, stop := a.Async.Wait(u.ID, agent, container)
	defer stop()
	s.begin()
	s.flush()
	every := a.AsyncRecheck
	if every <= 0 {
		every = DefaultAsyncRecheck
	}
	reoffer := asyncReofferEvery * every
	sent := map[string]time.Time{} // task ID → when last sent
	// send tells the items not told yet, or not for reoffer, and whether
	// there were any.
	send := func() (told bool) {
		ws, err := a.Async.Work(r.Context(), u.ID, agent, container)
		if err != nil {
			return false // the store is away: the next wake or recheck retries
		}
		now := time.Now()
		live := map[string]bool{}
		for _, it := range ws {
			live[it.TaskID] = true
			if at, ok := sent[it.TaskID]; ok && now.Sub(at) < reoffer {
				continue
			}
			sent[it.TaskID] = now
			s.event("work", async.WorkWire(it))
			told = true
		}
		for id := range sent {
			if !live[id] {
				delete(sent, id) // answered or timed out: forget it
			}
		}
		return told
	}
	send()
	s.flush()
	follow(r.Context(), s, a.StreamsDone, a.AsyncRecheck, DefaultAsyncRecheck, wake, func(struct{}) { send() }, send)
}

var agentNameRe = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func validAgent(agent, container string) bool {
	return agentNameRe.MatchString(agent) && (container == "" || agentNameRe.MatchString(container))
}

// asyncContent serves the pinned version of a task's job (Range, If-Range
// and the file hash as ETag: a resumed fetch gets the same bytes or starts
// over).
func (a *API) asyncContent(w http.ResponseWriter, r *http.Request, u meta.User) {
	j, err := a.Async.Content(r.Context(), u.ID, r.URL.Query().Get("task"))
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	n := meta.Node{UserID: j.User, Path: j.Path, Size: j.Size, FileHash: j.FileHash, ModTime: j.Started}
	rd := a.D.OpenVersion(r.Context(), n, j.Chunks)
	defer rd.Close()
	w.Header().Set("ETag", strconv.Quote(j.FileHash))
	w.Header().Set("Content-Type", "application/octet-stream")
	if err := dav.ServeReader(w, r, a.D, rd, "", j.Started, a.Log); err != nil {
		a.WriteError(w, r, err)
	}
}

func (a *API) asyncReport(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.AsyncReport
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.Async.Report(r.Context(), u.ID, req.Agent, req.Container, req.TaskID, req.OK, req.Message); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) asyncProgress(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.AsyncProgress
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.Async.Progress(r.Context(), u.ID, req.Agent, req.Container, req.TaskID, req.Bytes); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
