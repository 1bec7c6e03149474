package async

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"netdisk/internal/zero"
	"netdisk/meta"
)

// Embedded is the Store of one daemon without Redis: records in the
// daemon's SQLite database (meta.AsyncJobs), so a restart finds them again.
type Embedded struct {
	db  meta.AsyncJobs
	ttl time.Duration
}

var _ Store = (*Embedded)(nil)

// NewEmbedded returns a store over db whose records live ttl (0 means
// DefaultTTL) from their last write.
func NewEmbedded(db meta.AsyncJobs, ttl time.Duration) *Embedded {
	zero.OrDefault(&ttl, DefaultTTL)
	return &Embedded{db: db, ttl: ttl}
}

func enc(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("async: encode %T: %v", v, err)) // plain structs: cannot fail
	}
	return string(b)
}

func dec[T any](s string) (T, error) {
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return v, fmt.Errorf("async: decode %T: %w", v, err)
	}
	return v, nil
}

func (e *Embedded) CreateJob(ctx context.Context, j Job, now time.Time) (bool, error) {
	return e.db.AsyncCreateJob(ctx, j.ID, string(j.Status), enc(j), now.Add(e.ttl), now)
}

func (e *Embedded) Job(ctx context.Context, id string, now time.Time) (Job, error) {
	_, data, err := e.db.AsyncJob(ctx, id, now)
	if err != nil {
		return Job{}, err
	}
	return dec[Job](data)
}

func (e *Embedded) UpdateJob(ctx context.Context, j Job, now time.Time) error {
	return e.db.AsyncUpdateJob(ctx, j.ID, string(j.Status), enc(j), now.Add(e.ttl), now)
}

func (e *Embedded) DeleteJob(ctx context.Context, id string) error {
	return e.db.AsyncDeleteJob(ctx, id)
}

func (e *Embedded) Jobs(ctx context.Context, now time.Time) ([]string, error) {
	return e.db.AsyncJobs(ctx, now)
}

func (e *Embedded) PushTarget(ctx context.Context, jobID string, t Target, now time.Time) error {
	return e.db.AsyncPushTarget(ctx, jobID, enc(t), now.Add(e.ttl))
}

func (e *Embedded) Targets(ctx context.Context, jobID string, now time.Time) ([]Target, error) {
	rows, err := e.db.AsyncTargets(ctx, jobID, now)
	return decAll[Target](rows, err)
}

func (e *Embedded) PutTask(ctx context.Context, t Task, now time.Time) error {
	return e.db.AsyncPutTask(ctx, t.ID, enc(t), now.Add(e.ttl))
}

func (e *Embedded) Task(ctx context.Context, id string, now time.Time) (Task, error) {
	data, err := e.db.AsyncTask(ctx, id, now)
	if err != nil {
		return Task{}, err
	}
	return dec[Task](data)
}

func (e *Embedded) SetResult(ctx context.Context, jobID string, r Result, now time.Time) (bool, error) {
	return e.db.AsyncSetResult(ctx, jobID, r.TaskID, enc(r), now.Add(e.ttl), now)
}

func (e *Embedded) Results(ctx context.Context, jobID string, now time.Time) (map[string]Result, error) {
	return decMap[Result](e.db.AsyncResults(ctx, jobID, now))
}

func (e *Embedded) AddWork(ctx context.Context, user int64, w Work, now time.Time) error {
	return e.db.AsyncAddWork(ctx, AgentKey(user, w.Agent, w.Container), w.TaskID, enc(w), now.Add(e.ttl))
}

func (e *Embedded) DoneWork(ctx context.Context, agentKey, taskID string) error {
	return e.db.AsyncDoneWork(ctx, agentKey, taskID)
}

func (e *Embedded) Work(ctx context.Context, agentKey string, now time.Time) ([]Work, error) {
	rows, err := e.db.AsyncWork(ctx, agentKey, now)
	return decAll[Work](rows, err)
}

// AddTask creates the job (unless live), pushes the target and stores the
// task in one SQLite transaction; when the live job is no longer Pending
// nothing is added and its status is returned (see Service.Add).
func (e *Embedded) AddTask(ctx context.Context, j Job, t Target, task Task, now time.Time) (bool, Status, error) {
	created, st, err := e.db.AsyncAddTask(ctx, j.ID, string(Pending), enc(j), enc(t), task.ID, enc(task), now.Add(e.ttl), now)
	return created, Status(st), err
}

// The progress of a job's targets and the known agents are kept as work
// items of reserved agent keys (ProgressKey, KnownAgentKey): the same
// records with an expiry, so no table of their own.

func (e *Embedded) Touch(ctx context.Context, jobID string, now time.Time) error {
	j, err := e.Job(ctx, jobID, now)
	if err != nil {
		return err
	}
	ts, err := e.Targets(ctx, jobID, now)
	if err != nil {
		return err
	}
	tasks := make([]string, 0, len(ts))
	work := make([][2]string, 0, 2*len(ts))
	for _, t := range ts {
		tasks = append(tasks, t.TaskID)
		work = append(work, [2]string{AgentKey(t.UserOf(j), t.Agent, t.Container), t.TaskID}, [2]string{ProgressKey(jobID), t.TaskID})
	}
	return e.db.AsyncTouch(ctx, jobID, tasks, work, now.Add(e.ttl), now)
}

func (e *Embedded) SetProgress(ctx context.Context, jobID string, p Progress, now time.Time) error {
	return e.db.AsyncAddWork(ctx, ProgressKey(jobID), p.TaskID, enc(p), now.Add(e.ttl))
}

func (e *Embedded) Progress(ctx context.Context, jobID string, now time.Time) (map[string]Progress, error) {
	ps, err := decAll[Progress](e.db.AsyncWork(ctx, ProgressKey(jobID), now))
	if err != nil {
		return nil, err
	}
	out := make(map[string]Progress, len(ps))
	for _, p := range ps {
		out[p.TaskID] = p
	}
	return out, nil
}

func (e *Embedded) SeenAgent(ctx context.Context, agentKey string, now time.Time) error {
	return e.db.AsyncAddWork(ctx, KnownAgentKey(agentKey), "", enc(now), now.Add(KnownAgentTTL))
}

func (e *Embedded) KnownAgent(ctx context.Context, agentKey string, now time.Time) (bool, error) {
	rows, err := e.db.AsyncWork(ctx, KnownAgentKey(agentKey), now)
	return len(rows) > 0, err
}

// Purge deletes expired records (Service.Run calls it; reads ignore them
// anyway).
func (e *Embedded) Purge(ctx context.Context, now time.Time) error { return e.db.AsyncPurge(ctx, now) }

func decAll[T any](rows []string, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rows))
	for _, s := range rows {
		v, err := dec[T](s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// decMap decodes a map of encoded records, keeping its keys.
func decMap[T any](rows map[string]string, err error) (map[string]T, error) {
	if err != nil {
		return nil, err
	}
	out := make(map[string]T, len(rows))
	for k, s := range rows {
		v, err := dec[T](s)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func sortWork(ws []Work) { sort.Slice(ws, func(i, j int) bool { return ws[i].TaskID < ws[j].TaskID }) }

// PurgeOwner removes a user's records (Store).
func (e *Embedded) PurgeOwner(ctx context.Context, user int64) error {
	job, task, agent := ownerPrefixes(user)
	// Progress and known agents are work rows under keys of their own.
	return e.db.AsyncPurgeOwner(ctx, job, task, agent, ProgressKey(job), KnownAgentKey(agent))
}
