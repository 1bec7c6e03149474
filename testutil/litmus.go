package testutil

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
)

// LitmusSuite is one of litmus's suites with the number of tests it runs
// when everything passes. A suite that stops early (litmus skips the rest
// after a failed prerequisite) runs fewer.
type LitmusSuite struct {
	Name  string
	Tests int
}

// LitmusSuites are the suites litmus runs by default, 104 tests in all
// (Apache mod_dav passes 104 of 104).
var LitmusSuites = []LitmusSuite{
	{"basic", 16}, {"copymove", 13}, {"props", 30}, {"locks", 41}, {"http", 4},
}

var litmusSummary = regexp.MustCompile("<- summary for `([a-z]+)': of ([0-9]+) tests run: ([0-9]+) passed, ([0-9]+) failed")

// RunLitmus runs the WebDAV compliance suites against the collection url
// (e.g. a daemon's URL + "/dav/") as user, and fails the test unless each
// suite passes every one of its tests. Its FAIL and WARNING lines, and on
// failure the end of litmus's debug.log, go to the test log.
func RunLitmus(t testing.TB, url, user, pass string, suites []LitmusSuite) {
	t.Helper()
	bin := RequireTool(t, "litmus")
	names := make([]string, len(suites))
	for i, s := range suites {
		names[i] = s.Name
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir() // litmus writes debug.log into its working directory
	cmd := exec.CommandContext(ctx, bin, url, user, pass)
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
		r, ok := got[s.Name]
		switch {
		case !ok:
			t.Errorf("litmus suite %s did not run to its summary (an earlier suite failed?)", s.Name)
		case r[2] != 0 || r[1] != s.Tests:
			t.Errorf("litmus suite %s: %d of %d passed, %d failed; want all %d", s.Name, r[1], r[0], r[2], s.Tests)
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
