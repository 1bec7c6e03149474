package async

import "time"

// Wire types of the async endpoints (/api/v1/async/…, docs/API.md "Async
// downloads"), shared by the API and the client. (To move into the package
// of wire types.)

// WireAdd is the body of POST /api/v1/async/tasks.
type WireAdd struct {
	Path      string `json:"path"`
	Agent     string `json:"agent"`
	Container string `json:"container,omitempty"`
	TargetDir string `json:"targetDir"`
}

// WireTask is the answer of POST /api/v1/async/tasks and GET
// /api/v1/async/task.
type WireTask struct {
	TaskID    string    `json:"taskId"`
	JobID     string    `json:"jobId"`
	Status    Status    `json:"status"`
	Message   string    `json:"message,omitempty"`
	Path      string    `json:"path"`
	Agent     string    `json:"agent"`
	Container string    `json:"container,omitempty"`
	TargetDir string    `json:"targetDir"`
	Created   time.Time `json:"createTime"`
}

// WireReport is the body of POST /api/v1/async/agent/report.
type WireReport struct {
	Agent     string `json:"agent"`
	Container string `json:"container,omitempty"`
	TaskID    string `json:"taskId"`
	OK        bool   `json:"ok"`
	Message   string `json:"message,omitempty"`
}

// WireOf is a task status on the wire.
func WireOf(ts TaskStatus) WireTask {
	return WireTask{TaskID: ts.ID, JobID: ts.JobID, Status: ts.Status, Message: ts.Message, Path: ts.Path,
		Agent: ts.Agent, Container: ts.Container, TargetDir: ts.TargetDir, Created: ts.Created}
}
