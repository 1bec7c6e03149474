package errs

import (
	"errors"

	"netdisk/internal/bytesize"
)

// Shortfall is the cause of a Quota error that knows its figures: how many
// bytes the user had free and how many the refused operation needed. Its
// text gives them in the product's units (bytesize: "26.7 MiB free, 210 MiB
// needed"), so every edge that shows the message (the API's body, WebDAV's
// 507, the CLI) says it the same way; the API's error body carries the exact
// counts beside it for programs (apitype.Error's Free and Needed).
type Shortfall struct {
	Free, Need int64
	What       string // said after "needed", e.g. " for the entry and its properties"
}

func (s *Shortfall) Error() string {
	free, need := bytesize.Format(s.Free), bytesize.Format(s.Need)
	msg := "quota exceeded: " + free + " free, " + need + " needed" + s.What
	if free == need {
		// Rounded alike, the two figures would not say why it was refused.
		msg += " (short by " + bytesize.Format(s.Need-s.Free) + ")"
	}
	return msg
}

// OverQuota is the error of an operation refused by the user's quota: kind
// Quota, with a Shortfall of free (a negative free, when usage is already
// past the total, counts as 0) and need bytes.
func OverQuota(op, path string, free, need int64, what string) error {
	return E(op, Quota, path, &Shortfall{Free: max(free, 0), Need: need, What: what})
}

// ShortfallOf returns the figures of a quota refusal in err's chain, or nil
// when err has none.
func ShortfallOf(err error) *Shortfall {
	var s *Shortfall
	if Is(err, Quota) && errors.As(err, &s) {
		return s
	}
	return nil
}
