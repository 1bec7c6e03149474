package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"netdisk/testutil"
)

// BenchmarkSmallPutHTTP PUTs 4 KiB files one after another on one keep-alive
// connection to the real daemon over loopback, as `go run ./bench/webdav`
// does: the per-request cost of a small upload, HTTP, auth, hashing and the
// durable commit included. "dav" PUTs over WebDAV, "api" uses the API's
// one-request upload. Besides ns/op (wall time, noisy on a shared machine) it
// reports daemon-cpu-µs/op, the daemon's user+system CPU per PUT from
// /proc/PID/stat: the figure to compare builds by (run with -benchtime=3000x
// or more, the clock ticks are 10 ms). The daemon logs at warn, as in the
// benchmark. With NETDISK_PPROF=127.0.0.1:PORT the daemon serves
// net/http/pprof there (serve --pprof), so its profiles can be taken while
// this runs.
func BenchmarkSmallPutHTTP(b *testing.B) {
	for _, mode := range []string{"dav", "api"} {
		b.Run(mode, func(b *testing.B) { benchSmallPut(b, mode) })
	}
}

func benchSmallPut(b *testing.B, mode string) {
	flags := []string{"--gc-interval", "0"}
	if a := os.Getenv("NETDISK_PPROF"); a != "" {
		flags = append(flags, "--pprof", a)
	}
	d, err := testutil.LaunchDaemon(context.Background(), testutil.DaemonConfig{Bin: testutil.Binary(b),
		DataDir: b.TempDir(), AdminPass: "admin-test-pass", LogLevel: "warn", Args: flags})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(d.Stop)
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	ctx := context.Background()
	send := func(method, path string, body []byte, want ...int) {
		req, err := http.NewRequestWithContext(ctx, method, d.URL+path, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = int64(len(body))
		req.SetBasicAuth("admin", d.AdminPass)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, w := range want {
			if resp.StatusCode == w {
				return
			}
		}
		b.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	send("MKCOL", "/dav/small", nil, http.StatusCreated)
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	put := func(i int) {
		// New content every time, as a real folder of small files is.
		data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		name := fmt.Sprintf("/small/f%d", i)
		if mode == "api" {
			send("PUT", "/api/v1/file/upload?path="+url.QueryEscape(name), data, http.StatusOK)
		} else {
			send("PUT", "/dav"+name, data, http.StatusCreated)
		}
	}
	put(-1) // the connection, the credential cache and the statement caches are warm before the clock starts
	b.SetBytes(int64(len(data)))
	cpu0, sw0 := processCPU(b, d.Pid()), contextSwitches(b, d.Pid())
	b.ResetTimer()
	for i := range b.N {
		put(i)
	}
	b.StopTimer()
	b.ReportMetric((processCPU(b, d.Pid())-cpu0)*1e6/float64(b.N), "daemon-cpu-µs/op")
	b.ReportMetric(float64(contextSwitches(b, d.Pid())-sw0)/float64(b.N), "daemon-ctxsw/op")
}

// contextSwitches is how many times the threads of process pid have been
// switched out so far (voluntary and not, /proc/PID/task/*/status). On a
// virtual machine a switch costs several microseconds, so their count per
// PUT is a part of its CPU cost that does not depend on how busy the machine
// is. Threads that have exited are not counted; Go rarely ends its threads.
func contextSwitches(b *testing.B, pid int) int64 {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, t := range tasks {
		raw, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended meanwhile
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				n += c
			}
		}
	}
	return n
}

// processCPU is the user + system CPU seconds of process pid so far, all its
// threads (/proc/PID/stat, clock ticks of 1/100 s).
func processCPU(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
	var user, sys float64
	if _, err := fmt.Sscan(f[11], &user); err != nil {
		b.Fatal(err)
	}
	if _, err := fmt.Sscan(f[12], &sys); err != nil {
		b.Fatal(err)
	}
	return (user + sys) / 100
}
