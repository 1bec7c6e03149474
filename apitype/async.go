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
}

// AsyncTask is the answer of POST /api/v1/async/tasks and GET
// /api/v1/async/task.
type AsyncTask struct {
	TaskID    string    `json:"taskId"`
	JobID     string    `json:"jobId"`
	Status    string    `json:"status"` // Pending, Running, Success, Failed, Timeout (async.Status)
	Message   string    `json:"message,omitempty"`
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
