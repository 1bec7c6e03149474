// Package async is netdisk's async download service (seed 002): many
// requests to deliver the same file to many targets within a time window
// become one Job, run once, with a status per request (Task).
//
// The model, from the seed (its bizID/appID are netdisk's user, its transfer
// engine netdisk's agents):
//   - A Task is one request: deliver the user's file at Path to one target
//     (an agent, optionally a container of it, and a directory under the
//     agent's root). Its ID is TaskKey(user, path, uuid).
//   - A Job is (user, path, time bucket), bucket = unix seconds / window
//     (DefaultWindow 15 s). Tasks of one window share the job; a later one
//     starts a new job. The job is created once (SetNX) and each task's
//     target appended to its list (LPUSH), both in one Store.AddTask.
//     Every key lives TTL (DefaultTTL 30 min) from its last write.
//   - A file shared with other users is its owner's (Files.Resource): the
//     job is (owner, owner's path, bucket) for the owner and every
//     recipient alike, and a recipient's target keeps them and their path:
//     their agent gets the work under that path and a digest of the job's
//     ID (PublicJobID), never the owner's path; at the start a target
//     whose share is gone fails without bytes.
//   - The scheduler (Service.Run, every DefaultTick 5 s; Service.Tick is one
//     pass) starts each Pending job whose window has ended: it takes the
//     job's lock (package lock, op LockOp) so that of several daemons
//     sharing one store only one runs it, pins the file's current version
//     (every target receives the same bytes even if the file changes
//     meanwhile), hands each target to its agent (Store.AddWork), and on
//     later ticks collects the per-target outcomes (Store.SetResult; the
//     first outcome of a target stands). The job ends Success when every
//     target succeeded, Failed when all answered and some failed, Timeout
//     when some had not answered by its deadline, DefaultTimeout (10 min)
//     after it started (those targets are marked Timeout). One target's
//     outcome never changes another's.
//   - A job's deadline (Job.Deadline) is its start plus the timeout; an
//     answer recorded before it counts even when the scheduler looks only
//     after it, an answer after it is not recorded.
//   - A target is only ever added to a Pending job (Store.AddTask checks
//     the status and pushes in one atomic step): a request racing the start
//     or the end of its window's job goes to the next window's job.
//   - While a job runs its records, its tasks' and its agents' work are
//     refreshed (Store.Touch, every TouchEvery), so a timeout longer than
//     the TTL never lets a running job expire.
//   - A target is only handed to an agent the user has registered (one
//     that opened its work stream within KnownAgentTTL), unless the request
//     says to wait for it: a misspelt agent is refused at once.
//   - A Task's status follows its target: Pending while its job collects,
//     Running once the job runs, Downloading once its agent reports
//     progress (bytes of the size), then its target's outcome.
//   - A daemon restarted mid-job finds the job Running in the store and
//     resumes it (re-pinning its recorded version) once the job's lock is
//     free: the dead daemon's lease ends, or with the in-process lock state
//     at once.
//
// The order of calls: Service.Add per request (errs.NotFound at once for a
// path that is no file of the user's, or an agent never seen); Service.Run
// in the background; agents register with Service.Seen, read Service.Work
// (woken by Service.Wait), tell Service.Progress and answer with
// Service.Report; Service.Status per task.
//
// State lives behind Store: Embedded (SQLite via meta.AsyncJobs, surviving a
// restart) or Redis (the seed's keys, listed on Redis in redis.go). Both
// run async/storetest. Time is the Service's clock: windows, ticks,
// deadlines and the embedded store's expiry follow it and are tested with
// a fake clock. The Redis store sets each key's expiry instant from the
// Service's now, but Redis expires keys on its own clock: with Redis the
// Service's clock is the real one (tests start their fake clock at the
// real time and check Redis's expiry instants, never wait for them).
package async

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"netdisk/meta"
)

// Defaults of Config.
const (
	DefaultWindow  = 15 * time.Second
	DefaultTick    = 5 * time.Second
	DefaultTimeout = 10 * time.Minute
	DefaultTTL     = 30 * time.Minute
	// TouchEvery is how often a running job's records are refreshed: well
	// within any TTL a daemon runs with.
	TouchEvery = time.Minute
	// KnownAgentTTL is how long an agent stays known after it last opened
	// its work stream.
	KnownAgentTTL = 90 * 24 * time.Hour
	// LockOp is the lock op a daemon takes a job under (resource: job ID).
	LockOp = "asyncjob"
)

// Status is a job's, a task's or a target's state.
type Status string

const (
	Pending Status = "Pending" // collecting targets until the window ends
	Running Status = "Running"
	Success Status = "Success"
	Failed  Status = "Failed"
	Timeout Status = "Timeout"
	// Downloading is a task's status while its agent reports progress: the
	// seed's per-target "downloading" (its transfer code 115).
	Downloading Status = "Downloading"
)

// Final reports whether s is an end state.
func (s Status) Final() bool { return s == Success || s == Failed || s == Timeout }

// Job is one file of one user in one time window, delivered to all its
// targets at once.
type Job struct {
	ID        string    `json:"jobId"`
	User      int64     `json:"user"`
	Path      string    `json:"path"`
	Bucket    int64     `json:"bucket"`
	WindowEnd time.Time `json:"windowEnd"`
	Status    Status    `json:"status"`
	Created   time.Time `json:"createTime"`
	Started   time.Time `json:"executeTime,omitzero"`
	// Deadline is when a running job times out: Started + the timeout.
	Deadline time.Time `json:"deadline,omitzero"`
	Ended    time.Time `json:"endTime,omitzero"`
	// The pinned version, set when the job starts.
	FileHash string           `json:"fileSignature,omitempty"`
	Size     int64            `json:"size"`
	Chunks   []meta.FileChunk `json:"chunks,omitempty"`
	// Dispatched is how many targets (in push order) were handed to their
	// agents. Targets are only pushed while the job is Pending, so all are
	// handed at the start; a later tick hands any it finds beyond.
	Dispatched int    `json:"dispatched"`
	Message    string `json:"message,omitempty"`
}

// Task is one request.
type Task struct {
	ID        string    `json:"taskId"`
	JobID     string    `json:"jobId"`
	User      int64     `json:"user"`
	Path      string    `json:"path"`
	FileName  string    `json:"fileName"`
	Agent     string    `json:"targetAgentId"`
	Container string    `json:"targetContainerId,omitempty"`
	TargetDir string    `json:"targetDir"`
	Created   time.Time `json:"createTime"`
}

// Target is a task's entry in its job's targets list.
type Target struct {
	TaskID    string `json:"taskId"`
	Agent     string `json:"agentId"`
	Container string `json:"containerId,omitempty"`
	TargetDir string `json:"targetDir"`
	// User and Path are the requester and the file's path in their tree
	// when the file is shared with them (the job is the owner's, keyed on
	// the owner's path); zero for the owner's own request.
	User int64  `json:"user,omitempty"`
	Path string `json:"path,omitempty"`
}

// UserOf is whose agent receives t of job j.
func (t Target) UserOf(j Job) int64 {
	if t.User != 0 {
		return t.User
	}
	return j.User
}

// PathOf is the path of j's file as t's requester names it.
func (t Target) PathOf(j Job) string {
	if t.User != 0 {
		return t.Path
	}
	return j.Path
}

// Result is a target's outcome.
type Result struct {
	TaskID  string    `json:"taskId"`
	Status  Status    `json:"status"`
	Message string    `json:"message,omitempty"`
	Time    time.Time `json:"time"`
}

// Work is a target handed to its agent: what to fetch and where to put it.
type Work struct {
	TaskID    string `json:"taskId"`
	JobID     string `json:"jobId"`
	Path      string `json:"path"`
	FileName  string `json:"fileName"`
	FileHash  string `json:"fileHash"`
	Size      int64  `json:"size"`
	Agent     string `json:"agentId"`
	Container string `json:"containerId,omitempty"`
	TargetDir string `json:"targetDir"`
	// Deadline is the job's: an answer after it is not recorded, so an
	// agent keeps retrying its report until then.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Progress is what an agent reported of a target it is delivering.
type Progress struct {
	TaskID string    `json:"taskId"`
	Bytes  int64     `json:"bytes"`
	Time   time.Time `json:"time"`
}

// AgentKey names an agent (of a container) of a user: a user's agents are
// their own namespace.
func AgentKey(user int64, agent, container string) string {
	return strconv.FormatInt(user, 10) + ":" + agent + ":" + container
}

// Bucket is the time bucket of t: unix seconds / window.
func Bucket(t time.Time, window time.Duration) int64 {
	return t.Unix() / int64(window/time.Second)
}

// WindowEnd is when bucket b's window ends.
func WindowEnd(b int64, window time.Duration) time.Time {
	return time.Unix((b+1)*int64(window/time.Second), 0)
}

// JobKey is the seed's job key: AsyncDownloadJob:{user}:{path}:{bucket}.
func JobKey(user int64, path string, bucket int64) string {
	return fmt.Sprintf("AsyncDownloadJob:%d:%s:%d", user, path, bucket)
}

// PublicJobID is how job id is shown to user uid: as it is to the job's
// owner; to a recipient of the shared file, a digest of it (the id names
// the owner's path, which the recipient must not learn), the same for
// every recipient of one job.
func PublicJobID(uid int64, id string) string {
	if strings.HasPrefix(id, "AsyncDownloadJob:"+strconv.FormatInt(uid, 10)+":") || strings.HasPrefix(id, "AsyncDownloadJob:shared:") {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return "AsyncDownloadJob:shared:" + hex.EncodeToString(h[:12])
}

// TargetsKey is the job's targets list key.
func TargetsKey(jobKey string) string {
	return strings.Replace(jobKey, "AsyncDownloadJob:", "AsyncDownloadJob:Targets:", 1)
}

// ResultsKey is the job's outcomes hash key (beyond the seed, which keeps
// them in the job record: a hash lets agents answer without rewriting it).
func ResultsKey(jobKey string) string {
	return strings.Replace(jobKey, "AsyncDownloadJob:", "AsyncDownloadJob:Results:", 1)
}

// ProgressKey is the job's progress hash key: task ID → Progress.
func ProgressKey(jobKey string) string {
	return strings.Replace(jobKey, "AsyncDownloadJob:", "AsyncDownloadJob:Progress:", 1)
}

// KnownAgentKey records that the agent (AgentKey) opened its work stream.
func KnownAgentKey(agentKey string) string { return "AsyncDownloadAgent:Known:" + agentKey }

// TaskKey is the seed's task key: AsyncDownloadTask:{user}:{path}:{uuid}.
func TaskKey(user int64, path, uuid string) string {
	return fmt.Sprintf("AsyncDownloadTask:%d:%s:%s", user, path, uuid)
}

// BucketOf parses the bucket from a job key; false when it has none.
func BucketOf(jobKey string) (int64, bool) {
	i := strings.LastIndexByte(jobKey, ':')
	if i < 0 {
		return 0, false
	}
	b, err := strconv.ParseInt(jobKey[i+1:], 10, 64)
	return b, err == nil
}

// Store keeps jobs, targets, tasks, outcomes and agents' work. Each record
// lives until now+TTL of its last write (the store's TTL); reads at or
// after that instant find nothing. Every method is atomic on its own; the
// Service orders them. Where the seed's SetNX then LPUSH left a window
// between two calls (a job created but not indexed, a target pushed to a
// job that had started meanwhile), AddTask is one step.
//
// Errors: errs.NotFound for a missing or expired job or task,
// errs.Unavailable when the backing service is unreachable.
type Store interface {
	// CreateJob stores j unless a live job has its ID (SetNX), listed by
	// Jobs in the same atomic step.
	CreateJob(ctx context.Context, j Job, now time.Time) (created bool, err error)
	Job(ctx context.Context, id string, now time.Time) (Job, error)
	// UpdateJob replaces a live job (its targets and outcomes live on as
	// long); errs.NotFound when it is gone.
	UpdateJob(ctx context.Context, j Job, now time.Time) error
	// DeleteJob removes a job; a missing one is success.
	DeleteJob(ctx context.Context, id string) error
	// Jobs lists the IDs of live jobs.
	Jobs(ctx context.Context, now time.Time) ([]string, error)
	// PushTarget appends to the job's targets (LPUSH); Targets returns
	// them oldest first.
	PushTarget(ctx context.Context, jobID string, t Target, now time.Time) error
	Targets(ctx context.Context, jobID string, now time.Time) ([]Target, error)
	PutTask(ctx context.Context, t Task, now time.Time) error
	Task(ctx context.Context, id string, now time.Time) (Task, error)
	// SetResult records r unless the target has an outcome already.
	SetResult(ctx context.Context, jobID string, r Result, now time.Time) (set bool, err error)
	Results(ctx context.Context, jobID string, now time.Time) (map[string]Result, error)
	// AddWork hands w to its agent; DoneWork takes it back; Work lists an
	// agent's (AgentKey) items.
	AddWork(ctx context.Context, user int64, w Work, now time.Time) error
	DoneWork(ctx context.Context, agentKey, taskID string) error
	Work(ctx context.Context, agentKey string, now time.Time) ([]Work, error)

	// AddTask, in one atomic step: creates j unless a live job has its ID
	// (as CreateJob); then, when the live job is Pending, pushes t and
	// stores task. It returns whether the job was created and the live
	// job's status; when that is not Pending nothing is written.
	AddTask(ctx context.Context, j Job, t Target, task Task, now time.Time) (created bool, status Status, err error)
	// Touch extends a live job, its targets, outcomes and progress, the
	// tasks of its targets and their agents' work items to now+TTL; a
	// missing job is errs.NotFound, and nothing expired comes back.
	Touch(ctx context.Context, jobID string, now time.Time) error
	// SetProgress records a target's progress (the latest stands);
	// Progress returns the job's by task ID.
	SetProgress(ctx context.Context, jobID string, p Progress, now time.Time) error
	Progress(ctx context.Context, jobID string, now time.Time) (map[string]Progress, error)
	// SeenAgent records that an agent (AgentKey) opened its work stream,
	// for KnownAgentTTL; KnownAgent tells whether one did.
	SeenAgent(ctx context.Context, agentKey string, now time.Time) error
	KnownAgent(ctx context.Context, agentKey string, now time.Time) (bool, error)
	// PurgeOwner removes every job, target, outcome, task and work item of
	// user (a deleted account), whatever their expiry.
	PurgeOwner(ctx context.Context, user int64) error
}

// ownerPrefixes are the key prefixes of user's jobs, tasks and agents.
func ownerPrefixes(user int64) (job, task, agent string) {
	u := strconv.FormatInt(user, 10)
	return "AsyncDownloadJob:" + u + ":", "AsyncDownloadTask:" + u + ":", u + ":"
}
