package async

import "netdisk/apitype"

// WireOf is a task status on the wire.
func WireOf(ts TaskStatus) apitype.AsyncTask {
	return apitype.AsyncTask{TaskID: ts.ID, JobID: ts.JobID, Status: string(ts.Status), Message: ts.Message, Path: ts.Path,
		Agent: ts.Agent, Container: ts.Container, TargetDir: ts.TargetDir, Created: ts.Created, Bytes: ts.Bytes, Size: ts.Size}
}
