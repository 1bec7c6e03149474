package async

import "netdisk/apitype"

// WireOf is a task status on the wire, to the task's user (the job named
// in their terms: PublicJobID).
func WireOf(ts TaskStatus) apitype.AsyncTask {
	return apitype.AsyncTask{TaskID: ts.ID, JobID: PublicJobID(ts.User, ts.JobID), Status: string(ts.Status), Message: ts.Message, Path: ts.Path,
		Agent: ts.Agent, Container: ts.Container, TargetDir: ts.TargetDir, Created: ts.Created, Bytes: ts.Bytes, Size: ts.Size}
}

// WorkWire is a queued work item on the wire. The queue keeps its own type
// (its encoding is the stored one) so that the two may part later.
func WorkWire(w Work) apitype.AsyncWork {
	return apitype.AsyncWork{TaskID: w.TaskID, JobID: w.JobID, Path: w.Path, FileName: w.FileName, FileHash: w.FileHash,
		Size: w.Size, Agent: w.Agent, Container: w.Container, TargetDir: w.TargetDir, Deadline: w.Deadline}
}
