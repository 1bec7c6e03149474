package chunker

import (
	"context"
	"errors"
	"time"
)

// Options tune a pipeline run; the zero value is usable.
type Options struct {
	ChunkSize   int64 // default DefaultChunkSize
	Concurrency int   // queue limit N; default 3 (seed 004)
	HashWorkers int   // default GOMAXPROCS
	// Uploaded reports chunks the session already holds (init's "uploaded"):
	// their tasks complete without a call.
	Uploaded func(index int) bool
	// Hashes, when it has one entry per chunk, are the chunk hashes already
	// known to the caller (e.g. computed as the data was written): the file
	// is then not read to hash it, only to send or prove chunks.
	Hashes []string
	// Retries is how many times a failing call is retried (default 5; <0 none).
	Retries int
	// Backoff is the first retry delay, doubled each time up to MaxBackoff,
	// with full jitter (defaults 200ms, 5s).
	Backoff, MaxBackoff time.Duration
	// Retryable decides whether an error is worth retrying (default: not
	// context errors, not errors marked Permanent).
	Retryable func(error) bool
	// Sleep waits between retries; tests inject it (default: a timer honouring ctx).
	Sleep func(ctx context.Context, d time.Duration) error
	// OnEvent observes every event, in order, one at a time. It runs under
	// the pipeline's lock: keep it short and do not call back into the pipeline.
	OnEvent func(Event)
}

// Result is what a finished run did.
type Result struct {
	FileHash string
	Instant  bool // completed by the file check, without merge
	Counters Counters
}

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying (e.g. a 4xx answer).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// ErrAborted is wrapped by the error of a run whose queue aborted.
var ErrAborted = errors.New("upload aborted")
