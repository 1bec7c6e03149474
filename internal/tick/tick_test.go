package tick

import (
	"context"
	"testing"
	"time"
)

// TestEveryRunsUntilCancelled: fn runs on each tick, and Every returns once
// fn cancels the context, without another call.
func TestEveryRunsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, func(context.Context) {
			calls++
			if calls == 3 {
				cancel()
			}
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context was cancelled")
	}
	if calls != 3 {
		t.Fatalf("fn ran %d times, want 3 (no call after the cancel)", calls)
	}
}

// TestEveryCancelledBeforeTick: a context already ended never calls fn.
func TestEveryCancelledBeforeTick(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Every(ctx, time.Millisecond, func(context.Context) { t.Error("fn called on an ended context") })
}
