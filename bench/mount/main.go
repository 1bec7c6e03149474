// Command mount benchmarks `netdisk mount` against `rclone mount` (VFS cache
// mode writes) of `netdisk serve`'s WebDAV and against the local disk, in one
// run: sequential write (with fsync) and read, 4 KiB random reads, `ls -l` of
// a large folder and `cp -r` of a source tree; then the cold sequential read
// (a new mount process, an empty cache) beside a GET of the same file, in
// -cold-rounds rounds.
//
//	go run ./bench/mount                       # 1 GiB, 10,000 entries
//	go run ./bench/mount -size 64MiB -entries 300 -randreads 200 -src ./mount   # quick check
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/apitype"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/benchmount"
	"netdisk/client"
	"netdisk/testutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type target struct {
	name string
	dir  string
}

func run() error {
	sizeFlag := benchflag.Bytes("size", 1<<30, "sequential file size")
	entries := flag.Int("entries", 10000, "files in the folder listed with ls -l")
	randReads := flag.Int("randreads", 2000, "4 KiB random reads")
	srcTree := flag.String("src", "./mount", "source tree copied with cp -r (all of it)")
	work := flag.String("work", "", "scratch directory (default a temp dir, removed)")
	smallFiles := flag.Int("small", 10000, "small files created, written and closed (the small-file goal below)")
	smallSize := flag.Int("small-size", 1024, "size of each small file (≤ 1 MiB)")
	binFlag := flag.String("bin", "", "netdisk binary (default: built from this tree; another build compares versions)")
	coldRounds := flag.Int("cold-rounds", 3, "rounds of the cold read beside a GET (the median ratio is the figure)")
	writeBack := flag.Bool("write-back", true, "run netdisk mount with --write-back (as rclone's --vfs-cache-mode writes: close before the upload; fsync still waits)")
	flag.Parse()
	size := *sizeFlag
	if *coldRounds < 1 {
		return fmt.Errorf("-cold-rounds must be at least 1")
	}
	if *smallSize < 2 || *smallSize > 1<<20 {
		return fmt.Errorf("-small-size must be 2 B to 1 MiB")
	}
	for _, tool := range []string{"fusermount3", "rclone", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is required: %w", tool, err)
		}
	}
	dir := *work
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "netdisk-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	bin := *binFlag
	if bin == "" {
		var err error
		if bin, err = testutil.BuildBinary(context.Background(), dir); err != nil {
			return err
		}
	}
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	// Daemon, launched as the test suite launches it.
	ctx := context.Background()
	daemon, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: bin, DataDir: filepath.Join(dir, "data"),
		AdminPass: "bench-admin-pass", LogLevel: "warn", Output: os.Stderr})
	if err != nil {
		return err
	}
	cleanups = append(cleanups, daemon.Stop)
	url := daemon.URL
	if _, err := client.New(url, "admin", daemon.AdminPass).AdminAddUser(ctx, apitype.NewUser{Name: "bench", Password: "bench-pass"}); err != nil {
		return err
	}

	// netdisk mount.
	nd := filepath.Join(dir, "netdisk-mnt")
	os.Mkdir(nd, 0o755)
	ndMount := func(cache string) *exec.Cmd {
		args := []string{"mount", "--server", url, "--user", "bench", "--cache-dir", filepath.Join(dir, cache), "--cache-size", "4GiB"}
		if *writeBack {
			args = append(args, "--write-back")
		}
		return exec.Command(bin, append(args, nd)...)
	}
	m := ndMount("ndcache")
	m.Env = append(os.Environ(), "NETDISK_PASSWORD=bench-pass") // not on the command line (ps)
	m.Stderr = os.Stderr
	if err := m.Start(); err != nil {
		return err
	}
	cleanups = append(cleanups, func() { exec.Command("fusermount3", "-u", nd).Run(); m.Wait() }) // m: the latest mount process
	if err := benchmount.WaitMounted(nd, 30*time.Second); err != nil {
		return err
	}

	// rclone mount of the WebDAV.
	rc := filepath.Join(dir, "rclone-mnt")
	os.Mkdir(rc, 0o755)
	r, err := benchmount.Rclone(url, rc, filepath.Join(dir, "rccache"), "bench", "bench-pass")
	if err != nil {
		return err
	}
	r.Stderr = os.Stderr
	if err := r.Start(); err != nil {
		return err
	}
	cleanups = append(cleanups, func() { exec.Command("fusermount3", "-u", rc).Run(); r.Wait() })
	if err := benchmount.WaitMounted(rc, 30*time.Second); err != nil {
		return err
	}

	local := filepath.Join(dir, "local")
	os.Mkdir(local, 0o755)
	targets := []target{{"netdisk mount", nd}, {"rclone mount", rc}, {"local disk", local}}

	fmt.Printf("netdisk mount benchmark: %s sequential, %d random 4 KiB reads, ls -l of %d entries, cp -r of %s\n",
		humanize.IBytes(size), *randReads, *entries, *srcTree)
	fmt.Printf("%-14s %14s %14s %16s %12s %12s\n", "target", "seq write", "seq read", "rand 4K read", "ls -l", "cp -r")
	payload := make([]byte, 1<<20)
	rand.Read(payload)
	writeTime := map[string]time.Duration{}
	for _, t := range targets {
		f := filepath.Join(t.dir, "seq.bin")
		w, err := timed(func() error { return seqWrite(f, int64(size), payload) })
		if err != nil {
			return fmt.Errorf("%s: write: %w", t.name, err)
		}
		writeTime[t.name] = w
		rd, err := timed(func() error { return seqRead(f) })
		if err != nil {
			return fmt.Errorf("%s: read: %w", t.name, err)
		}
		rr, err := timed(func() error { return randRead(f, int64(size), *randReads) })
		if err != nil {
			return fmt.Errorf("%s: random read: %w", t.name, err)
		}
		big := filepath.Join(t.dir, "many")
		if err := makeMany(big, *entries); err != nil {
			return fmt.Errorf("%s: create %d entries: %w", t.name, *entries, err)
		}
		time.Sleep(1500 * time.Millisecond) // let attribute caches expire: measure a cold listing
		ls, err := timed(func() error { return exec.Command("ls", "-l", big).Run() })
		if err != nil {
			return fmt.Errorf("%s: ls: %w", t.name, err)
		}
		cp, err := timed(func() error {
			out, err := exec.Command("cp", "-r", *srcTree, filepath.Join(t.dir, "tree")).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("%s: cp -r: %w", t.name, err)
		}
		mbps := func(d time.Duration) string {
			return fmt.Sprintf("%.0f MB/s", float64(size)/d.Seconds()/1e6)
		}
		fmt.Printf("%-14s %14s %14s %16s %12s %12s\n", t.name, mbps(w), mbps(rd),
			fmt.Sprintf("%.0f IOPS", float64(*randReads)/rr.Seconds()), ls.Round(time.Millisecond), cp.Round(time.Millisecond))
	}

	// The mount's performance goals, as ratios in this run.
	fmt.Printf("\nmount goals (netdisk mount vs rclone mount --vfs-cache-mode writes, this run)\n")
	wn, wr := writeTime["netdisk mount"], writeTime["rclone mount"]
	fmt.Printf("%-46s netdisk %6.0f MB/s  rclone %6.0f MB/s  %.2f× (goal ≥ 0.80×)\n", "sequential write + fsync",
		float64(size)/wn.Seconds()/1e6, float64(size)/wr.Seconds()/1e6, wr.Seconds()/wn.Seconds())
	var rates [2]float64
	var landed time.Duration
	for i, t := range targets[:2] {
		start := time.Now()
		d, err := timed(func() error { return makeSmall(filepath.Join(t.dir, "small"), *smallFiles, payload[:*smallSize]) })
		if err != nil {
			return fmt.Errorf("%s: create %d small files: %w", t.name, *smallFiles, err)
		}
		rates[i] = float64(*smallFiles) / d.Seconds()
		if i == 0 {
			// With write-back the uploads go on after the last close: how
			// long until the server lists them all (polled, a bench only).
			if landed, err = waitListed(ctx, client.New(url, "bench", "bench-pass"), "/small", *smallFiles, 10*time.Minute); err != nil {
				return err
			}
			landed = time.Since(start)
		}
	}
	mode := "upload at close"
	if *writeBack {
		mode = "--write-back"
	}
	fmt.Printf("%-46s netdisk %6.0f files/s rclone %6.0f files/s %.2f× (goal ≥ 1.00×; netdisk %s)\n",
		fmt.Sprintf("create+write+close %d files of %d B", *smallFiles, *smallSize), rates[0], rates[1], rates[0]/rates[1], mode)
	fmt.Printf("%-46s netdisk %6.0f files/s (all %d on the server after %.1f s)\n", "  …until the server has them",
		float64(*smallFiles)/landed.Seconds(), *smallFiles, landed.Seconds())

	// Cold read: a new mount process with an empty cache (the kernel's page
	// cache of a FUSE file does not outlive the mount), beside a plain
	// WebDAV GET of the same file from the same daemon, in rounds (one
	// sample swings by 2×): the goal is on the median ratio.
	var ratios []float64
	for r := range *coldRounds {
		exec.Command("fusermount3", "-u", nd).Run()
		m.Wait()
		m2 := ndMount(fmt.Sprintf("ndcache-cold%d", r))
		m2.Env, m2.Stderr = m.Env, os.Stderr
		if err := m2.Start(); err != nil {
			return err
		}
		m = m2
		if err := benchmount.WaitMounted(nd, 30*time.Second); err != nil {
			return err
		}
		dropCaches() // best effort: the daemon's chunk files, for both readers alike
		cold, err := timed(func() error { return seqRead(filepath.Join(nd, "seq.bin")) })
		if err != nil {
			return fmt.Errorf("cold read: %w", err)
		}
		dropCaches()
		get, err := timed(func() error { return httpGet(url+"/dav/seq.bin", "bench", "bench-pass", int64(size)) })
		if err != nil {
			return fmt.Errorf("WebDAV GET: %w", err)
		}
		ratios = append(ratios, get.Seconds()/cold.Seconds())
		fmt.Printf("%-46s mount %6.0f MB/s  GET %6.0f MB/s     %.2f×\n", fmt.Sprintf("cold sequential read vs WebDAV GET, round %d", r+1),
			float64(size)/cold.Seconds()/1e6, float64(size)/get.Seconds()/1e6, get.Seconds()/cold.Seconds())
	}
	slices.Sort(ratios)
	fmt.Printf("%-46s %.2f× (goal ≥ 0.60×)\n", fmt.Sprintf("cold sequential read, median of %d", len(ratios)), ratios[len(ratios)/2])
	return nil
}

// waitListed polls the server's listing of dir until it holds n entries.
func waitListed(ctx context.Context, c *client.Client, dir string, n int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		es, err := c.List(ctx, dir)
		if err == nil && len(es) >= n {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("the server lists %d of %d files in %s after %v (%v)", len(es), n, dir, limit, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// makeSmall creates n files of data in dir, each written and closed.
func makeSmall(dir string, n int, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		data[0] = byte(i)
		data[1] = byte(i >> 8) // distinct content: no instant upload
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%05d", i)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// dropCaches asks the kernel to drop clean page cache (needs root; ignored
// when not allowed).
func dropCaches() {
	exec.Command("sync").Run()
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0o200)
}

func httpGet(u, user, pass string, want int64) error {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 1<<20))
	if err == nil && (resp.StatusCode != 200 || n != want) {
		err = fmt.Errorf("GET %s: %s, %d bytes (want %d)", u, resp.Status, n, want)
	}
	return err
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

// seqWrite writes size bytes and fsyncs: the figure includes storing.
func seqWrite(p string, size int64, buf []byte) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	for off := int64(0); off < size; off += int64(len(buf)) {
		n := min(int64(len(buf)), size-off)
		buf[0]++ // distinct chunks: no deduplication shortcut
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func seqRead(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(io.Discard, f, make([]byte, 1<<20))
	return err
}

func randRead(p string, size int64, n int) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		off := mrand.Int64N(max(size-4096, 1)) &^ 4095
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

func makeMany(dir string, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			return err
		}
	}
	return nil
}
