// Command web benchmarks uploading through the web page against the CLI: a
// file (1 GiB by default) uploaded through the page in headless Chromium
// (the Worker pipeline of seed 000: SparkMD5 chunk hashes, N = 3 queue) and
// with `netdisk push`, each to a fresh daemon, then the same bytes again
// under another name (instant upload: hashing only, no bytes sent).
//
//	go run ./bench/web                 # 1 GiB
//	go run ./bench/web -size 128MiB    # quick check
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchdata"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/inproc"
	"netdisk/daemon"
	"netdisk/testutil"
	"netdisk/web/browsertest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run() error {
	sizeFlag := benchflag.Bytes("size", 1<<30, "file size")
	csFlag := benchflag.Bytes("chunk-size", 4<<20, "server chunk size")
	withPush := flag.Bool("push", true, "also measure netdisk push (false: the page only, e.g. for -size 10GiB)")
	flag.Parse()
	size, cs := *sizeFlag, *csFlag
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return fmt.Errorf("chromium not installed (apt-get install -y chromium): %w", err)
	}
	dir, err := os.MkdirTemp("", "netdisk-bench-web-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	fmt.Printf("file %s, chunk %s, %d CPUs, loopback\n", humanize.IBytes(size), humanize.IBytes(cs), runtime.NumCPU())
	bin, err := testutil.BuildBinary(ctx, dir)
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "big.bin")
	if err := benchdata.WriteRandom(file, pathKey(file), int64(size)); err != nil {
		return err
	}
	copyFile := filepath.Join(dir, "big-copy.bin")
	if err := os.Link(file, copyFile); err != nil { // same bytes, another name, no extra disk
		return err
	}

	// netdisk push, to its own daemon.
	var dPush, dPushAgain time.Duration
	if *withPush {
		if dPush, dPushAgain, err = pushBoth(ctx, dir, bin, file, copyFile, int64(cs)); err != nil {
			return err
		}
	}

	// The page in headless Chromium, to a fresh daemon.
	webURL, stop, err := startDaemon(ctx, int64(cs))
	if err != nil {
		return err
	}
	defer stop()
	b, closeBrowser, err := browsertest.Launch(filepath.Join(dir, "chromium"), chromium, func(string, ...any) {})
	if err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	defer closeBrowser()
	if err := b.Do(time.Minute, browsertest.SignInActions(webURL, "admin", inproc.AdminPass)...); err != nil {
		return fmt.Errorf("sign in: %w", err)
	}
	upload := func(local, remote string) (time.Duration, browsertest.UploadRow, error) {
		var row browsertest.UploadRow
		start := time.Now()
		err := b.Do(time.Hour,
			chromedp.SetUploadFiles("#pick-files", []string{local}, chromedp.ByQuery),
			chromedp.Poll(browsertest.WaitUploadJS(remote, "done", "error"), &row, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(time.Hour)))
		d := time.Since(start)
		if err == nil && row.State != "done" {
			err = fmt.Errorf("upload of %s: %s", remote, row.Text)
		}
		return d, row, err
	}
	baseRSS := chromiumRSS()
	peak := make(chan int64)
	stopSampling := make(chan struct{})
	go func() { // Chromium's memory while the page uploads: it should stay at a few chunks
		var max int64
		for {
			select {
			case <-stopSampling:
				peak <- max
				return
			case <-time.After(100 * time.Millisecond):
				max = maxInt(max, chromiumRSS())
			}
		}
	}()
	dWeb, row, err := upload(file, "/big.bin")
	close(stopSampling)
	peakRSS := <-peak
	if err != nil {
		return err
	}
	if row.Sent != int64(size) {
		return fmt.Errorf("the page sent %d bytes, want %d", row.Sent, size)
	}
	dWebAgain, row, err := upload(copyFile, "/big-copy.bin")
	if err != nil {
		return err
	}
	if !row.Instant || row.Sent != 0 {
		return fmt.Errorf("re-upload through the page was not instant: %+v", row)
	}

	fmt.Println()
	report("upload, web page (Chromium)", dWeb, int64(size))
	if *withPush {
		report("upload, netdisk push", dPush, int64(size))
	}
	report("instant re-upload, web page", dWebAgain, int64(size))
	if *withPush {
		report("instant re-upload, push", dPushAgain, int64(size))
		fmt.Printf("\nweb page / push: %.2fx the time; instant re-upload = hashing the file (no bytes sent)\n", dWeb.Seconds()/dPush.Seconds())
	}
	fmt.Printf("Chromium memory (PSS of all its processes): %s before the upload, %s at most during it\n",
		humanize.IBytes(uint64(baseRSS)), humanize.IBytes(uint64(peakRSS)))
	return nil
}

// pushBoth times `netdisk push` of file, then of its copy (instant), to a
// daemon of its own.
func pushBoth(ctx context.Context, dir, bin, file, copyFile string, cs int64) (time.Duration, time.Duration, error) {
	cliURL, stop, err := startDaemon(ctx, cs)
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	push := func(local, remote string) (time.Duration, error) {
		cmd := exec.CommandContext(ctx, bin, "push", "--server", cliURL, "--user", "admin", "--password", inproc.AdminPass, local, remote)
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		start := time.Now()
		err := cmd.Run()
		return time.Since(start), err
	}
	d1, err := push(file, "/big.bin")
	if err != nil {
		return 0, 0, fmt.Errorf("netdisk push: %w", err)
	}
	d2, err := push(copyFile, "/big-copy.bin")
	if err != nil {
		return 0, 0, fmt.Errorf("netdisk push again: %w", err)
	}
	return d1, d2, nil
}

func report(what string, d time.Duration, bytes int64) {
	fmt.Printf("%-30s %10v  %s/s\n", what, d.Round(time.Millisecond), humanize.IBytes(uint64(float64(bytes)/d.Seconds())))
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// chromiumRSS sums the resident memory (PSS) of this process's descendants
// (the browser and its renderer, GPU, network and utility processes).
func chromiumRSS() int64 {
	ents, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	rss := map[int]int64{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) >= 2 && f[0] == "PPid:":
				parent[pid], _ = strconv.Atoi(f[1])
			}
		}
		// Pss (proportional set size) shares pages among the processes
		// mapping them, so the sum does not count shared libraries N times.
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "smaps_rollup")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					rss[pid] = kb << 10
				}
			}
		}
	}
	self := os.Getpid()
	var sum int64
	for pid, r := range rss {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				sum += r
				break
			}
		}
	}
	return sum
}

// startDaemon runs a daemon in this process on a free loopback port.
// startDaemon serves a fresh daemon in this process and returns its URL
// and what stops it.
func startDaemon(ctx context.Context, cs int64) (string, func(), error) {
	d, err := inproc.Start(ctx, daemon.Options{ChunkSize: cs})
	if err != nil {
		return "", nil, err
	}
	return d.URL, func() { d.Close() }, nil
}

// pathKey seeds a file's bytes with its path, so they are unlike anything
// the daemons hold.
func pathKey(p string) [32]byte {
	var key [32]byte
	copy(key[:], p)
	return key
}
