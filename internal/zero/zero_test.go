package zero_test

import (
	"log/slog"
	"testing"
	"time"

	"netdisk/internal/zero"
)

func TestOrDefault(t *testing.T) {
	for _, c := range []struct{ in, want time.Duration }{
		{0, time.Minute}, {-time.Second, time.Minute}, {time.Second, time.Second},
	} {
		v := c.in
		zero.OrDefault(&v, time.Minute)
		if v != c.want {
			t.Errorf("OrDefault(%v, 1m) = %v, want %v", c.in, v, c.want)
		}
	}
}

func TestClockAndLogger(t *testing.T) {
	fixed := time.Unix(42, 0)
	if got := zero.Clock(func() time.Time { return fixed })(); !got.Equal(fixed) {
		t.Errorf("a given clock is replaced: %v", got)
	}
	if got := zero.Clock(nil)(); time.Since(got) > time.Minute || time.Since(got) < 0 {
		t.Errorf("nil clock is not time.Now: %v", got)
	}
	l := slog.New(slog.DiscardHandler)
	if zero.Logger(l) != l || zero.Logger(nil) != slog.Default() {
		t.Error("Logger does not keep a given logger or default a nil one")
	}
}
