package chunker

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
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
	// Sums, when it has one entry per chunk, are the chunks' identities
	// already known to the caller (e.g. computed as the data was written):
	// the file is then not read to hash it, only to send or prove chunks.
	Sums []Sum
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

// withDefaults fills in the zero fields.
func (o Options) withDefaults() Options {
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 3
	}
	if o.HashWorkers <= 0 {
		o.HashWorkers = runtime.GOMAXPROCS(0)
	}
	if o.Retries == 0 {
		o.Retries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 200 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Retryable == nil {
		o.Retryable = func(err error) bool { return !IsPermanent(err) }
	}
	if o.Sleep == nil {
		o.Sleep = sleepCtx
	}
	return o
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retry is the pipeline's retry policy for calls made outside a run (a small
// file sent in one request, a session opened before the run): it calls f
// until it succeeds, fails with an error o.Retryable refuses, or has been
// retried o.Retries times, waiting between attempts with exponential backoff
// and full jitter (o.Backoff doubling up to o.MaxBackoff, through o.Sleep).
// o.OnEvent, if set, sees a ChunkRetry event (Index -1) before each wait.
func Retry(ctx context.Context, o Options, f func(context.Context) error) error {
	o = o.withDefaults()
	return retry(ctx, o, f, func(attempt int, err error) {
		if o.OnEvent != nil {
			e := Event{Kind: ChunkRetry, Index: -1, Attempt: attempt, Err: err}
			e.Error = err.Error()
			o.OnEvent(e)
		}
	})
}

// retry runs f as Retry says, with o already defaulted; onRetry sees each
// failed attempt that will be retried.
func retry(ctx context.Context, o Options, f func(context.Context) error, onRetry func(attempt int, err error)) error {
	d := o.Backoff
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !o.Retryable(err) || attempt > o.Retries {
			return err
		}
		onRetry(attempt, err)
		wait := time.Duration(rand.Int64N(int64(d)) + 1)
		if err := o.Sleep(ctx, wait); err != nil {
			return err
		}
		d = min(2*d, o.MaxBackoff)
	}
}
