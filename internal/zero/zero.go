// Package zero applies netdisk's rule for configuration left unset: a zero
// (or negative) duration or size, a nil clock or a nil logger means the
// default. Every Config of the daemon's services follows the rule; keeping
// it here keeps it one rule.
package zero

import (
	"log/slog"
	"time"
)

// OrDefault sets *v to def when *v is zero or negative.
func OrDefault[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Clock returns now, or time.Now when now is nil.
func Clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// Logger returns log, or slog.Default() when log is nil.
func Logger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.Default()
	}
	return log
}
