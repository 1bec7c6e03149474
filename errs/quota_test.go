package errs

import (
	"errors"
	"fmt"
	"testing"
)

// A quota refusal says its figures in the product's units, to every edge
// (Message), and keeps the exact counts for the API's body.
func TestOverQuota(t *testing.T) {
	for _, c := range []struct {
		free, need int64
		what, want string
	}{
		{27996979, 220200960, "", "quota exceeded: 26.7 MiB free, 210 MiB needed"},
		{0, 1023, "", "quota exceeded: 0 B free, 1023 B needed"},
		{-5, 10 << 30, "", "quota exceeded: 0 B free, 10 GiB needed"},
		{1 << 10, 2 << 10, " for the entry and its properties", "quota exceeded: 1 KiB free, 2 KiB needed for the entry and its properties"},
		// Rounded alike: the difference says why.
		{220200960 - 512, 220200960, "", "quota exceeded: 210 MiB free, 210 MiB needed (short by 512 B)"},
	} {
		err := fmt.Errorf("wrapped: %w", OverQuota("quota.Reserve", "", c.free, c.need, c.what))
		if KindOf(err) != Quota || Message(err) != c.want {
			t.Errorf("OverQuota(%d, %d): %v %q, want %q", c.free, c.need, KindOf(err), Message(err), c.want)
		}
		s := ShortfallOf(err)
		if s == nil || s.Free != max(c.free, 0) || s.Need != c.need {
			t.Errorf("ShortfallOf(%d, %d) = %+v", c.free, c.need, s)
		}
	}
	if m := Message(OverQuota("drive.Create", "/f", 5, 9, "")); m != "/f: quota exceeded: 5 B free, 9 B needed" {
		t.Errorf("with a path: %q", m)
	}
	if ShortfallOf(E("x", Invalid, "", &Shortfall{Free: 1, Need: 2})) != nil || ShortfallOf(errors.New("quota exceeded")) != nil {
		t.Error("figures of an error that is no quota refusal")
	}
}
