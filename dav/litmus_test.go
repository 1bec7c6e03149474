package dav_test

import (
	"os"
	"strings"
	"testing"

	"netdisk/testutil"
)

// TestLitmus runs the WebDAV compliance suite against the real daemon's
// /dav/. NETDISK_LITMUS_TESTS narrows the suites while iterating.
func TestLitmus(t *testing.T) {
	suites := testutil.LitmusSuites
	if only := os.Getenv("NETDISK_LITMUS_TESTS"); only != "" {
		keep := suites[:0:0]
		for _, s := range suites {
			if strings.Contains(" "+only+" ", " "+s.Name+" ") {
				keep = append(keep, s)
			}
		}
		suites = keep
	}
	d := testutil.StartDaemon(t)
	testutil.RunLitmus(t, d.URL+"/dav/", "admin", d.AdminPass, suites)
	// The sync clients' path to the same drive is the same handler.
	t.Run("remote.php", func(t *testing.T) {
		testutil.RunLitmus(t, d.URL+"/remote.php/dav/files/admin/", "admin", d.AdminPass, suites)
	})
}
