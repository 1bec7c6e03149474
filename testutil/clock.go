package testutil

import (
	"sync"
	"time"
)

// Clock is a fake clock for time-dependent logic (TTLs, windows, leases).
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock set at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
