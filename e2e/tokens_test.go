package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"netdisk/testutil"
)

// A `netdisk agent` signed in with an app token (NETDISK_PASSWORD, never
// the account's password) connects and receives an async download.
func TestAgentWithAppToken(t *testing.T) {
	e := startAsync(t)
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(5000)
	e.put("alice", "alice-pw", "/dav/f.txt", data)
	st, b, _ := e.call("POST", "/api/v1/account/tokens", "alice", "alice-pw", []byte(`{"name":"agent"}`), map[string]string{"Content-Type": "application/json"})
	var tok struct{ Token string }
	if st != http.StatusCreated || json.Unmarshal(b, &tok) != nil || tok.Token == "" {
		t.Fatalf("make a token: %d %s", st, b)
	}
	root := t.TempDir()
	a := &agent{logs: &testutil.SyncBuffer{}, done: make(chan struct{})}
	a.cmd = exec.Command(testutil.Binary(t), "agent", "--id", "tok", "--server", e.d.URL, "--user", "alice",
		"--dir", filepath.Join(root, "drop"), "--cache", filepath.Join(root, "cache"))
	a.cmd.Env = append(os.Environ(), "NETDISK_PASSWORD="+tok.Token)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	t.Cleanup(func() { a.stop(t, "tok") })
	e.waitAgent("tok", a)
	task := e.asyncAdd("/f.txt", "tok", "in")
	waitFor(t, 60*time.Second, "the token agent's task", func() bool { return e.asyncStatus(task.TaskID).Status == "Success" })
	got, err := os.ReadFile(filepath.Join(root, "drop", "in", "f.txt"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("delivered through the token's agent: %v, %d bytes", err, len(got))
	}
}
