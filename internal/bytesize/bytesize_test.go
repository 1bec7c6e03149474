package bytesize_test

import (
	"testing"

	"github.com/dustin/go-humanize"

	"netdisk/internal/bytesize"
	"netdisk/testutil"
)

// The table is shared with the web page's twin (web/static/size.js, run in
// Chromium by web's TestBrowserSizes): both must print these texts.
func TestFormat(t *testing.T) {
	cases := testutil.ByteSizes(t)
	if len(cases) < 20 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		if got := bytesize.Format(c.N); got != c.Text {
			t.Errorf("Format(%d) = %q, want %q", c.N, got, c.Text)
		}
	}
}

// What Format writes, the flags read back: within the rounding of three
// digits, the size it was.
func TestFormatParses(t *testing.T) {
	for _, n := range []int64{1024, 1536, 1 << 20, 27996979, 220200960, 10 << 30, 1 << 40} {
		s := bytesize.Format(n)
		got, err := humanize.ParseBytes(s)
		if err != nil {
			t.Fatalf("ParseBytes(%q): %v", s, err)
		}
		if d := float64(got) - float64(n); d > 0.005*float64(n) || d < -0.005*float64(n) {
			t.Errorf("Format(%d) = %q reads back as %d", n, s, got)
		}
	}
}
