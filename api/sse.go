package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"netdisk/errs"
)

// sseStream is one Server-Sent Events response: the lock event stream and
// the agents' work stream share how a stream starts, writes, keeps an idle
// connection open and ends.
type sseStream struct {
	w  http.ResponseWriter
	fl http.Flusher
}

// newSSE checks that w can stream; if not, the error is written for op and
// ok is false. Nothing is sent yet, so the caller can still answer with an
// error (a bad key, a store away) before begin.
func (a *API) newSSE(w http.ResponseWriter, r *http.Request, op string) (s *sseStream, ok bool) {
	fl, ok := w.(http.Flusher)
	if !ok {
		a.WriteError(w, r, errs.Errorf(op, errs.Other, "response cannot stream"))
		return nil, false
	}
	return &sseStream{w: w, fl: fl}, true
}

// begin sends the headers (no caching, no proxy buffering) and a retry hint
// of one second for the client's reconnects. Not flushed: the first events
// go out with them.
func (s *sseStream) begin() {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	fmt.Fprint(s.w, "retry: 1000\n\n")
}

// event writes one event named name with v as its JSON data.
func (s *sseStream) event(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
}

func (s *sseStream) flush() { s.fl.Flush() }

// follow runs the stream until ctx ends, done is closed (the server ends
// its streams) or wake is closed (cut off: the client reconnects). Each
// value from wake goes to onWake; every recheck period (def when not
// positive) recheck re-reads what the stream follows, so a wake-up lost on
// the way cannot leave the client waiting, and a round that told nothing
// sends a keep-alive comment so an idle connection is not cut. Each round
// is flushed.
func follow[T any](ctx context.Context, s *sseStream, done <-chan struct{}, every, def time.Duration,
	wake <-chan T, onWake func(T), recheck func() (told bool)) {
	if every <= 0 {
		every = def
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case v, ok := <-wake:
			if !ok {
				return
			}
			onWake(v)
		case <-tick.C:
			if !recheck() {
				fmt.Fprint(s.w, ": keep-alive\n\n")
			}
		}
		s.flush()
	}
}
