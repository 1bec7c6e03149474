package apitype

import "time"

// The bodies of the async download endpoints (/api/v1/async/…, docs/API.md
// "Async downloads", seed 002, package async).

// AsyncAdd is the body of POST /api/v1/async/tasks.
type AsyncAdd struct {
	Path      string `json:"path"`
	Agent     string `json:"agent"`
	Container string `json:"container,omitempty"`
	TargetDir string `json:"targetDir"`
	// WaitForAgent accepts an agent that has never connected (it will be
	// started later); without it such a request is refused with 404.
	WaitForAgent bool `json:"waitForAgent,omitempty"`
}

// AsyncTask is the answer of POST /api/v1/async/tasks and GET
// /api/v1/async/task.
type AsyncTask struct {
	TaskID  string `json:"taskId"`
	JobID   string `json:"jobId"`
	Status  string `json:"status"` // Pending, Running, Downloading, Success, Failed, Timeout (async.Status)
	Message string `json:"message,omitempty"`
	// Bytes of Size the agent has delivered, while Downloading.
	Bytes     int64     `json:"bytes,omitempty"`
	Size      int64     `json:"size,omitempty"`
	Path      string    `json:"path"`
	Agent     string    `json:"agent"`
	Container string    `json:"container,omitempty"`
	TargetDir string    `json:"targetDir"`
	Created   time.Time `json:"createTime"`
}

// AsyncReport is the body of POST /api/v1/async/agent/report.
type AsyncReport struct {
	Agent     string `json:"agent"`
	Container string `json:"container,omitempty"`
	TaskID    string `json:"taskId"`
	OK        bool   `json:"ok"`
	Message   string `json:"message,omitempty"`
}

// AsyncProgress is the body of POST /api/v1/async/agent/progress: how many
// bytes of the task's file the agent has so far (0 when it starts).
type AsyncProgress struct {
	Agent     string `json:"agent"`
	Container string `json:"container,omitempty"`
	TaskID    string `json:"taskId"`
	Bytes     int64  `json:"bytes"`
}

// AsyncWork is the data of a "work" event of GET /api/v1/async/agent/work: a
// target handed to its agent, what to fetch and where to put it.
type AsyncWork struct {
	TaskID    string `json:"taskId"`
	JobID     string `json:"jobId"`
	Path      string `json:"path"`
	FileName  string `json:"fileName"`
	FileHash  string `json:"fileHash"`
	Size      int64  `json:"size"`
	Agent     string `json:"agentId"`
	Container string `json:"containerId,omitempty"`
	TargetDir string `json:"targetDir"` // relative to the agent's root (vpath.CleanRel)
	// Deadline is the job's: an answer after it is not recorded, so an
	// agent keeps retrying its report until then.
	Deadline time.Time `json:"deadline,omitzero"`
}
