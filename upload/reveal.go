package upload

import (
	"fmt"
	"strconv"
	"strings"

	"netdisk/meta"
)

// Instant upload without an existence oracle (docs/API.md,
// "Instant upload and privacy"). patchHash on another user's content is a
// question "does anyone here hold this?": answered truthfully, it lets any
// account test whether a given document, or one with a guessable field, is
// stored by someone (Harnik, Pinkas and Shulman-Peleg, 2010). A user's own
// content is always instant. Content only others hold is revealed, with a
// challenge, only once it is common: when its distinct owners (users whose
// files hold it; open sessions never count) reach a threshold T drawn once
// per content in [MinOwners, MaxOwners]. Below T the answer is exactly the
// one for unknown content, the client sends the bytes, and storage
// deduplicates them silently. T is secret, so watching when content turns
// instant tells a prober little: it only becomes visible among at least
// MinOwners users, and which count in the range turned it is random.

// InstantMode says when patchHash reveals content only other users hold.
type InstantMode int

const (
	// InstantPrivate reveals content once its distinct owners reach its
	// secret threshold (the default).
	InstantPrivate InstantMode = iota
	// InstantShared reveals any content another user holds, sessions
	// included: most bandwidth saved, at the price of the existence oracle,
	// for installations whose users trust each other.
	InstantShared
	// InstantOff never reveals others' content: only a user's own is instant.
	InstantOff
)

var instantModes = []string{"private", "shared", "off"}

func (m InstantMode) String() string {
	if m < 0 || int(m) >= len(instantModes) {
		return fmt.Sprintf("InstantMode(%d)", int(m))
	}
	return instantModes[m]
}

// ParseInstantMode reads "private", "shared" or "off".
func ParseInstantMode(s string) (InstantMode, error) {
	for i, n := range instantModes {
		if s == n {
			return InstantMode(i), nil
		}
	}
	return 0, fmt.Errorf("instant upload mode %q: want private, shared or off", s)
}

// Default threshold range of InstantPrivate (distinct owners).
const (
	DefaultMinOwners = 2
	DefaultMaxOwners = 10
)

// Instant configures cross-user instant upload. The zero value is
// InstantPrivate with the default range.
type Instant struct {
	Mode InstantMode
	// MinOwners and MaxOwners bound the per-content thresholds of
	// InstantPrivate (zero: the defaults). Each content's threshold is its
	// stored random draw mapped into this range, so changing the range
	// changes every threshold at once without redrawing.
	MinOwners, MaxOwners int
}

// ParseOwnerRange reads a threshold range "MIN-MAX" (or one number for a
// fixed threshold), 1 ≤ MIN ≤ MAX.
func ParseOwnerRange(s string) (minOwners, maxOwners int, err error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		hi = lo
	}
	minOwners, err1 := strconv.Atoi(strings.TrimSpace(lo))
	maxOwners, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || minOwners < 1 || maxOwners < minOwners || maxOwners > 1<<20 {
		return 0, 0, fmt.Errorf("owner range %q: want MIN-MAX with 1 ≤ MIN ≤ MAX, e.g. 2-10", s)
	}
	return minOwners, maxOwners, nil
}

// Check refuses a configuration New would refuse.
func (c Instant) Check() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults fills the zero range and refuses a bad one.
func (c Instant) withDefaults() (Instant, error) {
	if c.MinOwners == 0 && c.MaxOwners == 0 {
		c.MinOwners, c.MaxOwners = DefaultMinOwners, DefaultMaxOwners
	}
	if c.Mode < InstantPrivate || c.Mode > InstantOff {
		return c, fmt.Errorf("upload: unknown %v", c.Mode)
	}
	if c.MinOwners < 1 || c.MaxOwners < c.MinOwners {
		return c, fmt.Errorf("upload: instant upload owner range %d-%d: want 1 ≤ min ≤ max", c.MinOwners, c.MaxOwners)
	}
	return c, nil
}

// limit is how far owners need counting: no threshold exceeds MaxOwners.
// Every mode counts as far, so the lookup's work does not depend on the mode
// either.
func (c Instant) limit() int { return c.MaxOwners }

// threshold maps a content's draw into the range; content without a draw
// gets the most cautious threshold.
func (c Instant) threshold(draw int64) int {
	if draw < 0 {
		return c.MaxOwners
	}
	return c.MinOwners + int(draw%int64(c.MaxOwners-c.MinOwners+1))
}

// reveals reports whether another user's content h may be answered with a
// challenge. The caller answers "send the bytes" otherwise, exactly as for
// unknown content.
func (c Instant) reveals(h meta.Holders) bool {
	switch c.Mode {
	case InstantShared:
		return true
	case InstantOff:
		return false
	}
	return h.Owners >= c.threshold(h.Draw)
}
