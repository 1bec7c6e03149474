package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// Async downloads with real `netdisk agent` processes.

const asyncWindow = 3 // seconds

func startAsync(t *testing.T) *env {
	return start(t, "--async-window", fmt.Sprint(asyncWindow, "s"), "--async-tick", "100ms", "--async-recheck", "200ms")
}

// agent is a `netdisk agent` process of alice's.
type agent struct {
	cmd  *exec.Cmd
	logs *testutil.SyncBuffer
	done chan struct{} // closed once it exited
}

// startAgent runs `netdisk agent` as alice on the daemon until the test ends.
func (e *env) startAgent(id, dir, cache string) { e.startAgentVia(id, dir, cache, e.d.URL) }

// startAgentVia runs `netdisk agent` as alice on server (the daemon or a
// proxy in front of it). At the test's end it is interrupted (killed if it
// lingers), and its output logged if the test failed.
func (e *env) startAgentVia(id, dir, cache, server string) *agent {
	e.t.Helper()
	return e.runAgent(id, server, "--dir", dir, "--cache", cache)
}

// runAgent runs `netdisk agent --id id` as alice on server with more flags.
func (e *env) runAgent(id, server string, flags ...string) *agent {
	e.t.Helper()
	a := &agent{logs: &testutil.SyncBuffer{}, done: make(chan struct{})}
	args := append([]string{"agent", "--id", id, "--server", server, "--user", "alice", "--password", "alice-pw"}, flags...)
	a.cmd = exec.Command(testutil.Binary(e.t), args...)
	a.cmd.Stdout, a.cmd.Stderr = a.logs, a.logs
	if err := a.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.done) }()
	e.t.Cleanup(func() { a.stop(e.t, id) })
	e.waitAgent(id, a)
	return a
}

// stop interrupts the agent (kills it if it lingers) and logs its output
// if the test failed.
func (a *agent) stop(t *testing.T, id string) {
	a.cmd.Process.Signal(os.Interrupt)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		a.kill()
	}
	if t.Failed() {
		t.Logf("agent %s:\n%s", id, a.logs.String())
	}
}

// waitAgent waits until the agent has opened its work stream (so that
// requests naming it are accepted).
func (e *env) waitAgent(id string, a *agent) {
	e.t.Helper()
	waitFor(e.t, 60*time.Second, "agent "+id+" to connect", func() bool {
		select {
		case <-a.done:
			e.t.Fatalf("agent %s exited:\n%s", id, a.logs.String())
		default:
		}
		st, b, _ := e.call("GET", "/api/v1/async/agents", "alice", "alice-pw", nil, nil)
		var l struct{ Agents []string }
		json.Unmarshal(b, &l)
		return st == http.StatusOK && slices.Contains(l.Agents, id+":")
	})
}

// kill kills the agent (SIGKILL: no chance to clean up) and waits for it.
func (a *agent) kill() {
	a.cmd.Process.Kill()
	<-a.done
}

type wireTask struct {
	TaskID, JobID, Status, Message string
}

// final tells whether a task status is an end state.
func final(status string) bool {
	return status == "Success" || status == "Failed" || status == "Timeout"
}

func (e *env) asyncAdd(path, agent, dir string) wireTask {
	e.t.Helper()
	return e.asyncAddBody(map[string]any{"path": path, "agent": agent, "targetDir": dir})
}

// asyncAddWaiting adds a task for an agent that has not connected yet.
func (e *env) asyncAddWaiting(path, agent, dir string) wireTask {
	e.t.Helper()
	return e.asyncAddBody(map[string]any{"path": path, "agent": agent, "targetDir": dir, "waitForAgent": true})
}

func (e *env) asyncAddBody(req map[string]any) wireTask {
	e.t.Helper()
	body, _ := json.Marshal(req)
	st, b, _ := e.call("POST", "/api/v1/async/tasks", "alice", "alice-pw", body, map[string]string{"Content-Type": "application/json"})
	if st != http.StatusCreated {
		e.t.Fatalf("add: %d %s", st, b)
	}
	var t wireTask
	json.Unmarshal(b, &t)
	return t
}

func (e *env) asyncStatus(id string) wireTask {
	e.t.Helper()
	st, b, _ := e.call("GET", "/api/v1/async/task?id="+queryEscape(id), "alice", "alice-pw", nil, nil)
	if st != http.StatusOK {
		e.t.Fatalf("status: %d %s", st, b)
	}
	var t wireTask
	json.Unmarshal(b, &t)
	return t
}

func queryEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", " ", "%20", "#", "%23", "?", "%3F")
	return r.Replace(s)
}

// waitWindowStart waits until the current window has at least left seconds
// to run, so the requests that follow share it.
func waitWindowStart(t *testing.T, left time.Duration) {
	waitFor(t, 2*asyncWindow*time.Second, "a fresh window", func() bool {
		now := time.Now()
		end := time.Unix((now.Unix()/asyncWindow+1)*asyncWindow, 0)
		return end.Sub(now) >= left
	})
}

func TestAsyncFiftyTasksTenAgents(t *testing.T) {
	e := startAsync(t)
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(3<<20 + 123)
	e.put("alice", "alice-pw", "/dav/payload.bin", data)

	root := t.TempDir()
	cache := filepath.Join(root, "host-cache") // one host: the agents share it
	for i := range 10 {
		e.startAgent(fmt.Sprint("a", i), filepath.Join(root, fmt.Sprint("a", i)), cache)
	}
	// Unknown path: 404 at once.
	body, _ := json.Marshal(map[string]string{"path": "/nope", "agent": "a0", "targetDir": "x"})
	if st, b, _ := e.call("POST", "/api/v1/async/tasks", "alice", "alice-pw", body, nil); st != http.StatusNotFound {
		t.Fatalf("unknown path: %d %s, want 404", st, b)
	}

	waitWindowStart(t, 2500*time.Millisecond)
	var tasks []wireTask
	for i := range 50 {
		tasks = append(tasks, e.asyncAdd("/payload.bin", fmt.Sprint("a", i%10), fmt.Sprint("t", i)))
	}
	for _, tk := range tasks[1:] {
		if tk.JobID != tasks[0].JobID {
			t.Fatalf("tasks of one window in jobs %s and %s", tasks[0].JobID, tk.JobID)
		}
	}
	// The file changes once its job has started: agents still get the
	// version the job pinned.
	waitFor(t, 30*time.Second, "the job to start", func() bool { return e.asyncStatus(tasks[0].TaskID).Status != "Pending" })
	e.put("alice", "alice-pw", "/dav/payload.bin", []byte("replaced"))
	waitFor(t, 90*time.Second, "50 tasks to end", func() bool {
		for _, tk := range tasks {
			switch e.asyncStatus(tk.TaskID).Status {
			case "Pending", "Running", "Downloading":
				return false
			}
		}
		return true
	})
	for i, tk := range tasks {
		st := e.asyncStatus(tk.TaskID)
		if st.Status != "Success" {
			t.Fatalf("task %d: %s %s", i, st.Status, st.Message)
		}
		got, err := os.ReadFile(filepath.Join(root, fmt.Sprint("a", i%10), fmt.Sprint("t", i), "payload.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("task %d: delivered %d bytes differ from the pinned %d", i, len(got), len(data))
		}
	}
	// One transfer into the host's cache served all 50 targets: the API
	// sent the content once (plus small JSON answers), not 50 times.
	if out := e.bytesOut("api"); out < int64(len(data)) || out > 2*int64(len(data)) {
		t.Fatalf("the API sent %d bytes for 50 targets of a %d-byte file: want one transfer", out, len(data))
	}
	ents, _ := os.ReadDir(cache)
	var cached []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			cached = append(cached, e.Name())
		}
	}
	if len(cached) != 1 {
		t.Fatalf("shared cache holds %v, want the one file", cached)
	}
}

func TestAsyncTwoWindowsTwoJobs(t *testing.T) {
	e := startAsync(t)
	e.addUser("alice", "alice-pw")
	data := testutil.RandBytes(10000)
	e.put("alice", "alice-pw", "/dav/f.txt", data)
	root := t.TempDir()
	e.startAgent("solo", filepath.Join(root, "solo"), filepath.Join(root, "cache"))
	waitWindowStart(t, time.Second)
	first := e.asyncAdd("/f.txt", "solo", "one")
	// The next window.
	b0 := time.Now().Unix() / asyncWindow
	waitFor(t, 2*asyncWindow*time.Second, "the next window", func() bool { return time.Now().Unix()/asyncWindow > b0 })
	second := e.asyncAdd("/f.txt", "solo", "two")
	if first.JobID == second.JobID {
		t.Fatalf("two windows share job %s", first.JobID)
	}
	waitFor(t, 60*time.Second, "both tasks", func() bool {
		return e.asyncStatus(first.TaskID).Status == "Success" && e.asyncStatus(second.TaskID).Status == "Success"
	})
	// The CLI prints the same status and job.
	cli := func(args ...string) []byte {
		cmd := exec.Command(testutil.Binary(t), append(args, "--server", e.d.URL, "--user", "alice", "--password", "alice-pw")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("netdisk %v: %v\n%s", args, err, out)
		}
		return out
	}
	if out := string(cli("async", "status", first.TaskID)); !strings.HasPrefix(out, "Success\tjob "+first.JobID+"\n") {
		t.Fatalf("async status: %q", out)
	}
	var js wireTask
	if err := json.Unmarshal(cli("async", "status", "--json", second.TaskID), &js); err != nil || js.Status != "Success" || js.JobID != second.JobID {
		t.Fatalf("async status --json: %+v %v", js, err)
	}
	third := strings.TrimSpace(string(cli("async", "add", "/f.txt", "--agent", "solo", "--target-dir", "three")))
	if !strings.HasPrefix(third, "AsyncDownloadTask:") {
		t.Fatalf("async add printed %q", third)
	}
	waitFor(t, 60*time.Second, "the CLI's task", func() bool { return e.asyncStatus(third).Status == "Success" })
	for _, d := range []string{"one", "two", "three"} {
		got, err := os.ReadFile(filepath.Join(root, "solo", d, "f.txt"))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %v, %d bytes", d, err, len(got))
		}
	}
	// Another user sees neither the task nor can target alice's file.
	e.addUser("bob", "bob-pw")
	if st, _, _ := e.call("GET", "/api/v1/async/task?id="+queryEscape(first.TaskID), "bob", "bob-pw", nil, nil); st != http.StatusNotFound {
		t.Fatalf("bob reads alice's task: %d", st)
	}
	if st, _, _ := e.call("GET", "/api/v1/async/agent/content?task="+queryEscape(first.TaskID), "bob", "bob-pw", nil, nil); st != http.StatusNotFound {
		t.Fatalf("bob fetches alice's content: %d", st)
	}
	// A target directory leaving the agent's root is refused.
	body, _ := json.Marshal(map[string]string{"path": "/f.txt", "agent": "solo", "targetDir": "../out"})
	if st, _, _ := e.call("POST", "/api/v1/async/tasks", "alice", "alice-pw", body, nil); st != http.StatusBadRequest {
		t.Fatalf("targetDir ../out: %d, want 400", st)
	}
}
