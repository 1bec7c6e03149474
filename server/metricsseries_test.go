package server_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/testutil"
)

// scrape reads the daemon's /metrics (as the admin) into series → value,
// a series named as the text format writes it: name{label="v",…}.
func scrape(t *testing.T, d *testutil.Daemon) map[string]float64 {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/metrics", "admin", d.AdminPass, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the series of name whose labels contain every one of labels.
func sum(m map[string]float64, name string, labels ...string) float64 {
	var s float64
	for k, v := range m {
		n, rest, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(rest, l)
		}
		if ok {
			s += v
		}
	}
	return s
}

// The real daemon's /metrics after traffic: every series the operator
// watches moved, no label carries a path or a user name, and a failed login
// (through a trusted proxy too) is one greppable line with the client's
// address.
func TestMetricsSeriesMove(t *testing.T) {
	// A lease far longer than the test: the waiter stays a waiter.
	d := testutil.StartDaemon(t, "--trusted-proxies", "127.0.0.1", "--async-tick", "200ms", "--lock-lease", "10m", "--log-level", "info")
	ctx := context.Background()
	do := func(method, path, user, pass string, body []byte, hdr map[string]string) *http.Response {
		t.Helper()
		resp, err := d.Do(ctx, method, path, user, pass, body, hdr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	expect := func(resp *http.Response, code int, what string) []byte {
		t.Helper()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != code {
			t.Fatalf("%s: %d %s, want %d", what, resp.StatusCode, b, code)
		}
		return b
	}
	admin := d.AdminPass
	before := scrape(t, d)

	// Traffic on every surface.
	expect(do("PUT", "/dav/secret-name.txt", "admin", admin, []byte("hello, metrics"), nil), 201, "PUT")
	expect(do("GET", "/dav/secret-name.txt", "admin", admin, nil, nil), 200, "GET")
	expect(do("GET", "/dav/missing.txt", "admin", admin, nil, nil), 404, "GET missing")
	expect(do("GET", "/", "", "", nil, nil), 200, "the web page")
	expect(do("GET", "/api/v1/quota", "admin", admin, nil, nil), 200, "quota")

	// Two uploads through the API: both open, each sent its chunk; one
	// merged, the other left open (its
	// received bytes reach the database through the ledger's delayed
	// task, 5 s after its chunk).
	content := testutil.RandBytes(1000)
	h := testutil.MD5Hex(content)
	begin := func(path string) string {
		b := expect(do("POST", "/api/v1/file/init", "admin", admin, []byte(`{"path":"`+path+`","size":1000}`), nil), 200, "init")
		var sess apitype.Session
		if err := json.Unmarshal(b, &sess); err != nil {
			t.Fatal(err)
		}
		expect(do("PUT", "/api/v1/file/uploadChunk?uploadId="+sess.UploadID+"&index=0&hash="+h, "admin", admin, content, nil), 200, "chunk")
		return sess.UploadID
	}
	up := begin("/up.bin")
	begin("/left-open.bin")
	open := scrape(t, d)
	if got := open["netdisk_upload_sessions_open"]; got != 2 {
		t.Fatalf("netdisk_upload_sessions_open with two uploads begun: %v, want 2", got)
	}
	mb, _ := json.Marshal(apitype.MergeRequest{UploadID: up, FileHash: chunker.FileHash([]string{h})})
	expect(do("POST", "/api/v1/file/merge", "admin", admin, mb, nil), 200, "merge")
	// The same content again, instant (named by its SHA-256, no byte
	// read): its checksums come from the checksum pass (the merge, its
	// chunk received in order, had them at once).
	sh := sha256.Sum256(content)
	q := "path=/again.bin&fileHash=" + chunker.FileHash([]string{h}) + "&fileSha256=" + chunker.FileSHA256([]string{hex.EncodeToString(sh[:])})
	expect(do("PUT", "/api/v1/file/upload?"+q, "admin", admin, content, nil), 200, "instant upload")

	// A lock held by one node and waited for by another.
	lockReq := func(node string) []byte {
		return []byte(`{"op":"pull","resource":"path:/up.bin","node":"` + node + `"}`)
	}
	expect(do("POST", "/api/v1/lock/try", "admin", admin, lockReq("n1"), nil), 200, "lock n1")
	expect(do("POST", "/api/v1/lock/try", "admin", admin, lockReq("n2"), nil), 200, "lock n2")

	// An async download waiting for its agent.
	expect(do("POST", "/api/v1/async/tasks", "admin", admin,
		[]byte(`{"path":"/up.bin","agent":"a1","targetDir":"x","waitForAgent":true}`), nil), 201, "async add")

	// GC on demand.
	expect(do("DELETE", "/dav/secret-name.txt", "admin", admin, nil, nil), 204, "DELETE")
	expect(do("DELETE", "/api/v1/trash", "admin", admin, nil, nil), 200, "empty the trash")
	expect(do("POST", "/api/v1/admin/gc", "admin", admin, []byte(`{}`), nil), 200, "gc")

	// Failed logins: directly, and through the trusted proxy (127.0.0.1)
	// for a client it names.
	expect(do("PROPFIND", "/dav/", "alice", "wrong", nil, nil), 401, "wrong password")
	expect(do("PROPFIND", "/dav/", "bob", "wrong", nil, map[string]string{"X-Forwarded-For": "203.0.113.7"}), 401, "wrong password via the proxy")

	// The background passes (checksums, the async scheduler, the ledger's
	// flush) report at their next round: wait for them, bounded.
	var m map[string]float64
	deadline := time.Now().Add(15 * time.Second)
	for {
		m = scrape(t, d)
		if m["netdisk_checksum_files_total"] >= 1 && sum(m, "netdisk_async_jobs") == 1 &&
			m["netdisk_quota_flushed_tasks_total"] >= 1 && m["netdisk_quota_flush_lag_seconds"] < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background series did not move in 15 s: checksum files %v, async jobs %v, flushed tasks %v, flush lag %v",
				m["netdisk_checksum_files_total"], sum(m, "netdisk_async_jobs"),
				m["netdisk_quota_flushed_tasks_total"], m["netdisk_quota_flush_lag_seconds"])
		}
		time.Sleep(50 * time.Millisecond)
	}

	moved := []struct {
		what        string
		before, now float64
	}{
		{"dav 2xx requests", sum(before, "netdisk_http_request_duration_seconds_count", `surface="dav"`, `class="2xx"`),
			sum(m, "netdisk_http_request_duration_seconds_count", `surface="dav"`, `class="2xx"`)},
		{"dav 4xx requests", sum(before, "netdisk_http_request_duration_seconds_count", `surface="dav"`, `class="4xx"`),
			sum(m, "netdisk_http_request_duration_seconds_count", `surface="dav"`, `class="4xx"`)},
		{"api 2xx requests", sum(before, "netdisk_http_request_duration_seconds_count", `surface="api"`, `class="2xx"`),
			sum(m, "netdisk_http_request_duration_seconds_count", `surface="api"`, `class="2xx"`)},
		{"web 2xx requests", sum(before, "netdisk_http_request_duration_seconds_count", `surface="web"`, `class="2xx"`),
			sum(m, "netdisk_http_request_duration_seconds_count", `surface="web"`, `class="2xx"`)},
		{"dav latency", sum(before, "netdisk_http_request_duration_seconds_sum", `surface="dav"`),
			sum(m, "netdisk_http_request_duration_seconds_sum", `surface="dav"`)},
		{"bytes in", sum(before, "netdisk_http_bytes_in_total"), sum(m, "netdisk_http_bytes_in_total")},
		{"bytes out", sum(before, "netdisk_http_bytes_out_total"), sum(m, "netdisk_http_bytes_out_total")},
		{"upload sessions open (the merge closed one)", 0, open["netdisk_upload_sessions_open"] - m["netdisk_upload_sessions_open"]},
		{"quota tasks flushed", before["netdisk_quota_flushed_tasks_total"], m["netdisk_quota_flushed_tasks_total"]},
		{"gc runs", before["netdisk_gc_runs_total"], m["netdisk_gc_runs_total"]},
		{"gc chunks", before["netdisk_gc_chunks_collected_total"], m["netdisk_gc_chunks_collected_total"]},
		{"gc last success", before["netdisk_gc_last_success_timestamp_seconds"], m["netdisk_gc_last_success_timestamp_seconds"]},
		{"checksum files", before["netdisk_checksum_files_total"], m["netdisk_checksum_files_total"]},
		{"lock waiters", before["netdisk_lock_waiters"], m["netdisk_lock_waiters"]},
		// Pending for its 15 s window, then Running (waiting for the agent).
		{"async jobs", sum(before, "netdisk_async_jobs"), sum(m, "netdisk_async_jobs")},
		{"login failures", sum(before, "netdisk_login_failures_total", `reason="password"`), sum(m, "netdisk_login_failures_total", `reason="password"`)},
	}
	for _, s := range moved {
		if s.now <= s.before {
			t.Errorf("%s did not move: %v then %v", s.what, s.before, s.now)
		}
	}
	if got := sum(m, "netdisk_login_failures_total", `reason="password"`); got != 2 {
		t.Errorf("netdisk_login_failures_total{reason=password}: %v, want 2", got)
	}
	// Bounded labels: no path, no user name.
	for k := range m {
		for _, leak := range []string{"secret-name", "up.bin", "left-open", "alice", "bob", "admin"} {
			if strings.Contains(k, leak) {
				t.Errorf("a series names %q: %s", leak, k)
			}
		}
	}

	logs := d.Logs()
	for _, want := range []string{`msg="auth failed" user=alice addr=127.0.0.1`, `msg="auth failed" user=bob addr=203.0.113.7`} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %s in the log:\n%s", want, logs)
		}
	}
}
