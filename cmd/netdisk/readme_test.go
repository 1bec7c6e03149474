package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"netdisk/client"
	"netdisk/testutil"
)

// readmeBlocks returns the ```sh blocks of the README section under heading.
func readmeBlocks(t *testing.T, readme, heading string) []string {
	t.Helper()
	_, sec, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q section", heading)
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(sec, "```sh\n")
		if !ok {
			return blocks
		}
		block, after, _ := strings.Cut(rest, "```")
		blocks = append(blocks, block)
		sec = after
	}
}

// TestReadmeFirstTenMinutes follows the README as a new user does, in its
// order, on a clean data directory: it says how to get netdisk on PATH
// before its first use, then its daemon line starts the drive and its quick
// start (as written, only the address changed to the test's port) creates
// a user who can sign in. A restart with the same line keeps the admin's
// password and says in the log that the variable was ignored.
func TestReadmeFirstTenMinutes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	// The first command line of a shell block that runs netdisk (after
	// variable assignments, if any).
	firstUse := -1
	run := regexp.MustCompile(`(?m)^([A-Z_]+=('[^']*'|\S+) )*netdisk\s`)
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatchIndex(readme, -1) {
		if u := run.FindStringIndex(readme[m[2]:m[3]]); u != nil {
			firstUse = m[2] + u[0]
			break
		}
	}
	if firstUse < 0 {
		t.Fatal("the README never runs netdisk")
	}
	for _, install := range []string{"go install ./cmd/netdisk", "go build -o /usr/local/bin/netdisk ./cmd/netdisk"} {
		if i := strings.Index(readme, install); i < 0 || i > firstUse {
			t.Errorf("the README does not say %q before its first use of netdisk", install)
		}
	}

	var serveLine string
	for _, block := range readmeBlocks(t, readme, "## The two commands") {
		for _, l := range strings.Split(block, "\n") {
			if strings.Contains(l, "netdisk serve") {
				serveLine = l
			}
		}
	}
	quick := readmeBlocks(t, readme, "## Quick start")
	if serveLine == "" || len(quick) == 0 {
		t.Fatalf("README: daemon line %q, %d quick start blocks", serveLine, len(quick))
	}

	// A shell as the user's: netdisk on PATH, no NETDISK_ variables of the
	// test's, in a clean folder (the default ./netdisk-data).
	path := filepath.Dir(testutil.Binary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	env := cliEnv(map[string]string{"PATH": path})
	home := t.TempDir()
	serve := func() (addr string, logs *testutil.SyncBuffer, stop func()) {
		t.Helper()
		ready := filepath.Join(t.TempDir(), "ready")
		cmd := exec.Command("bash", "-c", serveLine+" --listen 127.0.0.1:0 --ready-file "+ready)
		cmd.Dir, cmd.Env = home, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		logs = &testutil.SyncBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		stop = func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(time.Minute):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("the daemon did not stop on SIGTERM:\n%s", logs)
			}
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
		deadline := time.Now().Add(30 * time.Second)
		for {
			if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
				return strings.TrimSpace(string(b)), logs, stop
			}
			select {
			case <-exited:
				t.Fatalf("%s: the daemon exited:\n%s", serveLine, logs)
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not listening after 30s:\n%s", serveLine, logs)
			}
		}
	}

	addr, logs, stop := serve()
	// Its first block, the users; the examples after it need files of one's own.
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.ReplaceAll(quick[0], "127.0.0.1:8080", addr))
	cmd.Dir, cmd.Env = home, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the quick start: %v\n%s\ndaemon:\n%s", err, out, logs)
	}
	url := "http://" + addr
	ctx := context.Background()
	if q, err := client.New(url, "alice", "alice-pw").Quota(ctx); err != nil || q.Total != 10<<30 {
		t.Fatalf("alice after the quick start: quota %+v, %v", q, err)
	}
	stop()

	addr, logs, stop = serve()
	defer stop()
	if !strings.Contains(logs.String(), "NETDISK_ADMIN_PASSWORD ignored") {
		t.Errorf("a restart with the README's line does not say the variable is ignored:\n%s", logs)
	}
	if _, err := client.New("http://"+addr, "alice", "alice-pw").Quota(ctx); err != nil {
		t.Errorf("alice after a restart: %v", err)
	}
}
