package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// logLine is one line of a daemon's --log-json output.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	raw   string
}

// jsonLines parses the daemon's output from byte offset from: every line
// must be JSON (a line printed outside slog is an error of the test).
func jsonLines(t *testing.T, out string, from int) []logLine {
	t.Helper()
	var ls []logLine
	for _, s := range strings.Split(strings.TrimSpace(out[from:]), "\n") {
		if s == "" {
			continue
		}
		var l logLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Errorf("a log line outside slog's JSON: %q", s)
			continue
		}
		l.raw = s
		ls = append(ls, l)
	}
	return ls
}

// waitLog waits (bounded) until the daemon's output from offset from has a
// line containing msg: the daemon writes it before it answers the request
// that found the change, the test reads it through a pipe.
func waitLog(t *testing.T, d *testutil.Daemon, from int, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(d.Logs()[from:], msg) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log after 10 s:\n%s", msg, d.Logs()[from:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outageRequests are the requests that use Redis: a PUT (the quota ledger),
// a lock (the lock service), an async download (the job store), and a
// failed login (the shared throttle, with --meta). Each answers 503 while
// Redis is away, except the login (401 or 429: the throttle falls back to
// the node's own counts).
func outageRequests(t *testing.T, d *testutil.Daemon, i int) (put int) {
	t.Helper()
	ctx := context.Background()
	do := func(method, path, user, pass string, body string) int {
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		resp, err := d.Do(ctx, method, path, user, pass, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	put = do("PUT", fmt.Sprintf("/dav/f%d.txt", i), "admin", d.AdminPass, "hello")
	do("POST", "/api/v1/lock/try", "admin", d.AdminPass, `{"op":"pull","resource":"path:/f0.txt","node":"n1"}`)
	do("POST", "/api/v1/async/tasks", "admin", d.AdminPass, `{"path":"/f0.txt","agent":"a1","targetDir":"x","waitForAgent":true}`)
	do("PROPFIND", "/dav/", fmt.Sprintf("nobody%d", i%3), "wrong", "")
	return put
}

// With Redis down the daemon logs one line when it goes and one when it
// comes back, all through slog (JSON with --log-json), however many requests
// and background passes fail meanwhile.
func TestRedisOutageLogsTwoLines(t *testing.T) {
	t.Run("one node", func(t *testing.T) {
		r := testutil.StartRedis(t)
		redisOutage(t, r, testutil.StartDaemon(t, "--redis", r.URL, "--log-json", "--log-level", "info"))
	})
	t.Run("shared", func(t *testing.T) {
		pg := testutil.SharedPostgres(t)
		r := testutil.StartRedis(t)
		redisOutage(t, r, testutil.StartDaemon(t, "--meta", pg.NewDatabase(t), "--redis", r.URL,
			"--log-json", "--log-level", "info", "--lease-ttl", "1s"))
	})
}

func redisOutage(t *testing.T, r *testutil.Redis, d *testutil.Daemon) {
	if code := outageRequests(t, d, 0); code != http.StatusCreated {
		t.Fatalf("PUT with Redis up: %d, want 201", code)
	}
	mark := len(d.Logs())
	r.Stop()
	const n = 20
	for i := 1; i <= n; i++ {
		if code := outageRequests(t, d, i); code != http.StatusServiceUnavailable {
			t.Fatalf("PUT %d with Redis down: %d, want 503", i, code)
		}
	}
	waitLog(t, d, mark, "redis unreachable")
	r.Start()
	put := 0
	for i := n + 1; put != http.StatusCreated; i++ {
		if i > n+500 {
			t.Fatalf("PUT after Redis came back: %d, want 201", put)
		}
		put = outageRequests(t, d, i)
		if put != http.StatusCreated {
			time.Sleep(20 * time.Millisecond) // go-redis redials
		}
	}
	waitLog(t, d, mark, "redis reachable again")
	for i := range 5 {
		if code := outageRequests(t, d, 1000+i); code != http.StatusCreated {
			t.Fatalf("PUT with Redis back: %d, want 201", code)
		}
	}
	var got []string
	for _, l := range jsonLines(t, d.Logs(), mark) {
		if strings.HasPrefix(l.Msg, "auth ") {
			continue // the logins failed (and were throttled) on purpose
		}
		if l.Level == "INFO" && !strings.Contains(strings.ToLower(l.Msg), "redis") {
			// The work of the requests once Redis is back (an async job
			// queued by them starting, at the scheduler's next tick): not
			// about the outage. What failed during it logs WARN or ERROR.
			continue
		}
		got = append(got, l.raw)
	}
	if len(got) != 2 || !strings.Contains(got[0], `"WARN","msg":"redis unreachable`) || !strings.Contains(got[1], `"INFO","msg":"redis reachable again"`) {
		t.Fatalf("the log over an outage with %d failing requests: %d lines, want the outage's two:\n%s",
			n, len(got), strings.Join(got, "\n"))
	}
}

// A --redis unreachable at start: the daemon says so in one line, serves
// (503 for what needs Redis), and says once when Redis answers.
func TestRedisUnreachableAtStart(t *testing.T) {
	r := testutil.StartRedis(t)
	r.Stop()
	d := testutil.StartDaemon(t, "--redis", r.URL, "--log-json", "--log-level", "info")
	for i := 1; i <= 10; i++ {
		if code := outageRequests(t, d, i); code != http.StatusServiceUnavailable {
			t.Fatalf("PUT %d with Redis down since the start: %d, want 503", i, code)
		}
	}
	var got []string
	for _, l := range jsonLines(t, d.Logs(), 0) {
		switch {
		case l.Level == "INFO" && (l.Msg == "netdisk starting" || l.Msg == "created admin user" || l.Msg == "listening"),
			strings.HasPrefix(l.Msg, "auth "):
		default:
			got = append(got, l.raw)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `"WARN","msg":"redis unreachable at start; serving anyway`) {
		t.Fatalf("the log of a start without Redis: %d lines, want one saying so:\n%s", len(got), strings.Join(got, "\n"))
	}
	mark := len(d.Logs())
	r.Start()
	for i := 0; ; i++ {
		if i > 500 {
			t.Fatal("PUT still failing after Redis started")
		}
		if outageRequests(t, d, 100+i) == http.StatusCreated {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitLog(t, d, mark, "redis reachable again")
}
