package dav_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/internal/testutil"
)

// litmusSuites are litmus's suites with the number of tests each runs when
// everything passes (Apache mod_dav: 104 of 104). A suite that stops early
// (litmus skips the rest after a failed prerequisite) runs fewer.
var litmusSuites = []struct {
	name  string
	tests int
}{
	{"basic", 16}, {"copymove", 13}, {"props", 30}, {"locks", 41}, {"http", 4},
}

var litmusSummary = regexp.MustCompile("<- summary for `([a-z]+)': of ([0-9]+) tests run: ([0-9]+) passed, ([0-9]+) failed")

// TestLitmus runs the WebDAV compliance suite against the real daemon's
// /dav/. NETDISK_LITMUS_TESTS narrows the suites while iterating.
func TestLitmus(t *testing.T) {
	bin := testutil.RequireTool(t, "litmus")
	suites := litmusSuites
	if only := os.Getenv("NETDISK_LITMUS_TESTS"); only != "" {
		keep := suites[:0:0]
		for _, s := range suites {
			if strings.Contains(" "+only+" ", " "+s.name+" ") {
				keep = append(keep, s)
			}
		}
		suites = keep
	}
	names := make([]string, len(suites))
	for i, s := range suites {
		names[i] = s.name
	}

	d := testutil.StartDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir() // litmus writes debug.log into its working directory
	cmd := exec.CommandContext(ctx, bin, d.URL+"/dav/", "admin", d.AdminPass)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TESTS="+strings.Join(names, " "))
	out, err := cmd.CombinedOutput()
	text := string(out)

	got := map[string][3]int{} // run, passed, failed
	for _, m := range litmusSummary.FindAllStringSubmatch(text, -1) {
		run, _ := strconv.Atoi(m[2])
		passed, _ := strconv.Atoi(m[3])
		failed, _ := strconv.Atoi(m[4])
		got[m[1]] = [3]int{run, passed, failed}
		t.Logf("litmus %s: %d of %d passed, %d failed", m[1], passed, run, failed)
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "FAIL") || strings.Contains(line, "WARNING") {
			t.Log(strings.TrimSpace(line))
		}
	}
	total := 0
	for _, s := range suites {
		r, ok := got[s.name]
		switch {
		case !ok:
			t.Errorf("litmus suite %s did not run to its summary (an earlier suite failed?)", s.name)
		case r[2] != 0 || r[1] != s.tests:
			t.Errorf("litmus suite %s: %d of %d passed, %d failed; want all %d", s.name, r[1], r[0], r[2], s.tests)
		}
		total += r[1]
	}
	t.Logf("litmus total: %d passed", total)
	if t.Failed() {
		if err != nil {
			t.Logf("litmus: %v", err)
		}
		if dbg, rerr := os.ReadFile(filepath.Join(work, "debug.log")); rerr == nil {
			if len(dbg) > 8000 {
				dbg = dbg[len(dbg)-8000:]
			}
			t.Logf("end of litmus debug.log:\n%s", dbg)
		}
	}
}
