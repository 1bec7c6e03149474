// Package tick runs periodic background work: the janitors, expiry scans and
// heartbeats that wake on a ticker until their context ends.
package tick

import (
	"context"
	"time"
)

// Every calls fn once per interval d until ctx ends. The first call comes
// after d, not at once. A tick that arrives together with the cancellation
// does not call fn, so a loop that cancels its own ctx from fn runs no more.
// d must be positive, as for time.NewTicker.
func Every(ctx context.Context, d time.Duration, fn func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() != nil {
				return
			}
			fn(ctx)
		}
	}
}
