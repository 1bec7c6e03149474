package chunker

import (
	"fmt"
)

// EventKind names a pipeline event. The first five are seed 000's; the others
// report progress.
type EventKind int

const (
	ChunkHashed     EventKind = iota + 1 // one chunk hashed: a task entered the queue
	AllChunksHashed                      // no task will be added any more
	FileHashed                           // the file hash is known (Event.Hash)
	QueueDrained                         // every task succeeded
	QueueAborted                         // a task failed for good: everything is cancelled
	ChunkStarted                         // a task left pending and runs
	ChunkDone                            // a task succeeded (Event.How says how)
	ChunkRetry                           // a task attempt failed and will be retried (Event.Err, Event.Attempt)
	InstantUpload                        // the remote already held the file: finished without merge
	Merged                               // merge succeeded
	Cancelled                            // the caller's context was cancelled
	// MergeFailed: merge failed for good (Event.Err). When the error is
	// ErrContentChanged (the session's chunks are not the file's: a resumed
	// session holds chunks of an older version) and the Remote is a
	// Restarter, the run goes on in a fresh session: every chunk is checked
	// again by hash, only those the remote lacks are sent, and merge runs once
	// more, ending in Merged or a second MergeFailed. That re-check emits
	// ChunkStarted/ChunkDone per chunk but no second QueueDrained.
	MergeFailed
)

var kindNames = [...]string{"", "ChunkHashed", "AllChunksHashed", "FileHashed", "QueueDrained", "QueueAborted",
	"ChunkStarted", "ChunkDone", "ChunkRetry", "InstantUpload", "Merged", "Cancelled", "MergeFailed"}

func (k EventKind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// MarshalText makes events readable in JSON streams.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// How a chunk task completed.
type How string

const (
	HowUploaded How = "uploaded" // its bytes were sent
	HowExists   How = "exists"   // the remote held it for this user
	HowProved   How = "proved"   // someone else held it and the proof was accepted
	HowResumed  How = "resumed"  // the session already had it (Options.Uploaded)
)

// Counters are seed 000's queue counters, plus Hashed and Cancelled so that
// Hashed == Pending + InFlight + Completed + Failed + Cancelled always holds.
type Counters struct {
	TotalChunks     int  `json:"totalChunks"`
	Hashed          int  `json:"hashed"`
	Pending         int  `json:"pending"`
	InFlight        int  `json:"inFlight"`
	Completed       int  `json:"completed"`
	Failed          int  `json:"failed"`
	Cancelled       int  `json:"cancelled"`
	AllChunksHashed bool `json:"allChunksHashed"`
	// BytesSent counts chunk bytes actually uploaded; BytesSkipped those that
	// completed without sending (dedup, proof, resume).
	BytesSent    int64 `json:"bytesSent"`
	BytesSkipped int64 `json:"bytesSkipped"`
}

// drained is seed 000's condition for QueueDrained, verbatim.
func (c Counters) drained() bool {
	return c.AllChunksHashed && c.Pending == 0 && c.InFlight == 0 && c.Failed == 0 && c.Completed == c.TotalChunks
}

// Event is one observation of the pipeline, with the counters as they were
// right after it.
type Event struct {
	Kind     EventKind `json:"event"`
	Index    int       `json:"index"`
	Size     int64     `json:"size,omitempty"`
	Hash     string    `json:"hash,omitempty"`
	How      How       `json:"how,omitempty"`
	Attempt  int       `json:"attempt,omitempty"`
	Err      error     `json:"-"`
	Error    string    `json:"error,omitempty"` // Err's message, for JSON streams
	Counters Counters  `json:"counters"`
}
