// Command mountcpu measures where a sequential write + fsync through a mount
// spends CPU: it writes one file (distinct 1 MiB blocks, no deduplication)
// through `netdisk mount --write-back` or, with -rclone, `rclone mount
// --vfs-cache-mode writes` of the same daemon's WebDAV, and prints the
// throughput and the CPU seconds (user + system, all threads) the daemon,
// the mount process and the writer used meanwhile. The machine has 2 cores
// shared with others, so wall-clock figures are noisy; CPU seconds per byte
// are not, and they bound the throughput: a write cannot finish before the
// CPU it needs has been spent. With -prof N it also saves N seconds of Go
// profile (or trace, -kind trace) of the daemon and of the mount, both taken
// through their --pprof listeners, into -out.
//
//	go run ./bench/mountcpu -size 256MiB
//	go run ./bench/mountcpu -size 256MiB -rclone
//	go run ./bench/mountcpu -files 3 -settle 3s   # a stream of files: each one's background work meets the next
//	go run ./bench/mountcpu -size 256MiB -prof 3 -out /tmp/prof   # then go tool pprof -top /tmp/prof/daemon.profile
//
// With -read N it then reads the file back N times, each round through a new
// mount process with an empty cache (a cold read) and then by one WebDAV GET
// of the same file, and prints each round's throughputs and CPU seconds per
// GiB of the mount and the daemon, and the medians: the mount's cold
// sequential read goal is a ratio to the GET. -prof then profiles the first
// cold read instead of the write.
//
//	go run ./bench/mountcpu -size 512MiB -read 3
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/bench/internal/benchdata"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/benchmount"
	"netdisk/bench/internal/procstat"
	"netdisk/client"
	"netdisk/testutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mountcpu:", err)
		os.Exit(1)
	}
}

const (
	daemonPprof = "127.0.0.1:6060"
	mountPprof  = "127.0.0.1:6061"
)

func run() error {
	size := benchflag.Bytes("size", 256<<20, "file size")
	viaRclone := flag.Bool("rclone", false, "write through rclone mount instead of netdisk mount")
	prof := flag.Int("prof", 0, "seconds of profile to take of the daemon and the mount (0: none)")
	kind := flag.String("kind", "profile", "what -prof takes: profile (CPU) or trace")
	out := flag.String("out", os.TempDir(), "where -prof writes daemon.KIND and mount.KIND")
	files := flag.Int("files", 1, "write this many files one after another, each with its fsync, and report each (the daemon's background work on one overlaps the next)")
	settle := flag.Duration("settle", 0, "also report the daemon's CPU this long after the fsync (its background work on the new file: checksums)")
	bin := flag.String("bin", "", "netdisk binary (default: built from this tree)")
	reads := flag.Int("read", 0, "then this many rounds of a cold read through a new mount beside a WebDAV GET of the file")
	flag.Parse()
	dir, err := os.MkdirTemp("", "mountcpu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		if *bin, err = testutil.BuildBinary(context.Background(), dir); err != nil {
			return err
		}
	}
	ctx := context.Background()
	args := []string{}
	if *prof > 0 {
		args = append(args, "--pprof", daemonPprof)
	}
	d, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: *bin, DataDir: filepath.Join(dir, "data"),
		AdminPass: "bench-admin-pass", LogLevel: "warn", Output: os.Stderr, Args: args})
	if err != nil {
		return err
	}
	defer d.Stop()
	if _, err := client.New(d.URL, "admin", d.AdminPass).AdminAddUser(ctx, apitype.NewUser{Name: "bench", Password: "bench-pass"}); err != nil {
		return err
	}

	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	var m *exec.Cmd
	if *viaRclone {
		if m, err = benchmount.Rclone(d.URL, mnt, filepath.Join(dir, "cache"), "bench", "bench-pass"); err != nil {
			return err
		}
	} else {
		a := []string{"mount", "--server", d.URL, "--user", "bench", "--cache-dir", filepath.Join(dir, "cache"), "--write-back"}
		if *prof > 0 {
			a = append(a, "--pprof", mountPprof)
		}
		m = exec.Command(*bin, append(a, mnt)...)
		m.Env = append(os.Environ(), "NETDISK_PASSWORD=bench-pass")
	}
	m.Stderr = os.Stderr
	if err := m.Start(); err != nil {
		return err
	}
	defer func() { exec.Command("fusermount3", "-u", mnt).Run(); m.Wait() }()
	if err := benchmount.WaitMounted(mnt, 30*time.Second); err != nil {
		return err
	}

	profs := make(chan error, 2)
	if *prof > 0 && *reads == 0 {
		for _, p := range []struct{ addr, name string }{{daemonPprof, "daemon"}, {mountPprof, "mount"}} {
			if p.name == "mount" && *viaRclone {
				profs <- nil
				continue
			}
			go func() {
				profs <- fetch(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", p.addr, *kind, *prof), filepath.Join(*out, p.name+"."+*kind))
			}()
		}
		time.Sleep(200 * time.Millisecond) // the profiles start before the write
	}

	buf := make([]byte, 1<<20)
	rand.Read(buf)
	dpid, mpid := d.Pid(), m.Process.Pid
	d0 := cpuSeconds(dpid)
	tool := "netdisk mount --write-back"
	if *viaRclone {
		tool = "rclone mount --vfs-cache-mode writes"
	}
	for k := range *files {
		name := "seq.bin"
		if *files > 1 {
			name = fmt.Sprintf("seq%d.bin", k)
			tool = fmt.Sprintf("%s, file %d", strings.SplitN(tool, ",", 2)[0], k+1)
		}
		dk, mk, wk := cpuSeconds(dpid), cpuSeconds(mpid), cpuSeconds(os.Getpid())
		start := time.Now()
		wrote, err := writeSync(filepath.Join(mnt, name), int64(*size), buf, k)
		if err != nil {
			return err
		}
		el := time.Since(start)
		fmt.Printf("%s: %.0f MB/s (write %v, fsync %v); CPU s: daemon %.2f, mount %.2f, writer %.2f\n", tool,
			float64(*size)/el.Seconds()/1e6, wrote.Round(time.Millisecond), (el - wrote).Round(time.Millisecond),
			cpuSeconds(dpid)-dk, cpuSeconds(mpid)-mk, cpuSeconds(os.Getpid())-wk)
	}
	if *settle > 0 {
		time.Sleep(*settle)
		fmt.Printf("daemon CPU s until %v after the fsync: %.2f\n", *settle, cpuSeconds(dpid)-d0)
	}
	if *prof > 0 && *reads == 0 {
		return errors.Join(<-profs, <-profs)
	}
	if *reads > 0 {
		exec.Command("fusermount3", "-u", mnt).Run()
		m.Wait()
		return coldReads(d, *bin, dir, mnt, int64(*size), *reads, *prof, *kind, *out)
	}
	return nil
}

// coldReads reads seq.bin rounds times through a new netdisk mount with an
// empty cache, and each time by a WebDAV GET, and prints the figures.
func coldReads(d *testutil.Daemon, bin, dir, mnt string, size int64, rounds, prof int, kind, out string) error {
	const gib = 1 << 30
	var ratios, mountCPU, daemonCPU, getCPU []float64
	dpid := d.Pid()
	for r := range rounds {
		a := []string{"mount", "--server", d.URL, "--user", "bench", "--cache-dir", filepath.Join(dir, fmt.Sprintf("cold%d", r))}
		if prof > 0 && r == 0 {
			a = append(a, "--pprof", mountPprof)
		}
		m := exec.Command(bin, append(a, mnt)...)
		m.Env = append(os.Environ(), "NETDISK_PASSWORD=bench-pass")
		m.Stderr = os.Stderr
		if err := m.Start(); err != nil {
			return err
		}
		if err := benchmount.WaitMounted(mnt, 30*time.Second); err != nil {
			exec.Command("fusermount3", "-u", mnt).Run()
			m.Wait()
			return err
		}
		profs := make(chan error, 1)
		if prof > 0 && r == 0 {
			go func() {
				profs <- fetch(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", mountPprof, kind, prof), filepath.Join(out, "mount-read."+kind))
			}()
			time.Sleep(200 * time.Millisecond) // the profile starts before the read
		} else {
			profs <- nil
		}
		d0, m0, start := cpuSeconds(dpid), cpuSeconds(m.Process.Pid), time.Now()
		err := readAll(filepath.Join(mnt, "seq.bin"), size)
		cold := time.Since(start)
		dc, mc := cpuSeconds(dpid)-d0, cpuSeconds(m.Process.Pid)-m0
		err = errors.Join(err, <-profs)
		exec.Command("fusermount3", "-u", mnt).Run()
		m.Wait()
		if err != nil {
			return fmt.Errorf("cold read: %w", err)
		}
		g0, start := cpuSeconds(dpid), time.Now()
		if err := httpGet(d.URL+"/dav/seq.bin", size); err != nil {
			return err
		}
		get := time.Since(start)
		gc := cpuSeconds(dpid) - g0
		perGiB := func(cpu float64) float64 { return cpu * gib / float64(size) }
		fmt.Printf("round %d: cold read %.0f MB/s (CPU-s/GiB mount %.2f, daemon %.2f); GET %.0f MB/s (daemon %.2f CPU-s/GiB); %.2f× the GET\n",
			r+1, float64(size)/cold.Seconds()/1e6, perGiB(mc), perGiB(dc), float64(size)/get.Seconds()/1e6, perGiB(gc), get.Seconds()/cold.Seconds())
		ratios = append(ratios, get.Seconds()/cold.Seconds())
		mountCPU, daemonCPU, getCPU = append(mountCPU, perGiB(mc)), append(daemonCPU, perGiB(dc)), append(getCPU, perGiB(gc))
	}
	fmt.Printf("median of %d: cold read %.2f× the GET (goal ≥ 0.60×); CPU-s/GiB: mount %.2f, daemon %.2f (GET: daemon %.2f)\n",
		rounds, benchdata.Median(ratios), benchdata.Median(mountCPU), benchdata.Median(daemonCPU), benchdata.Median(getCPU))
	return nil
}

// readAll reads the file p through in 1 MiB reads (as cp and cat do, the
// kernel splits them into its own FUSE reads) and checks its size.
func readAll(p string, want int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, make([]byte, 1<<20))
	if err == nil && n != want {
		err = fmt.Errorf("read %d bytes of %s, want %d", n, p, want)
	}
	return err
}

func httpGet(u string, want int64) error {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.SetBasicAuth("bench", "bench-pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.CopyBuffer(io.Discard, resp.Body, make([]byte, 1<<20))
	if err == nil && (resp.StatusCode != http.StatusOK || n != want) {
		err = fmt.Errorf("GET %s: %s, %d bytes (want %d)", u, resp.Status, n, want)
	}
	return err
}

// writeSync writes size bytes of distinct 1 MiB blocks (no deduplication,
// within or across files: seed goes into each) to a new file p, fsyncs and
// closes it, and returns how long the writes took.
func writeSync(p string, size int64, buf []byte, seed int) (time.Duration, error) {
	start := time.Now()
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	for off, i := int64(0), 0; off < size; off, i = off+int64(len(buf)), i+1 {
		buf[0], buf[1], buf[2] = byte(i), byte(i>>8), byte(seed)
		if _, err := f.Write(buf[:min(int64(len(buf)), size-off)]); err != nil {
			f.Close()
			return 0, err
		}
	}
	wrote := time.Since(start)
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	return wrote, f.Close()
}

func fetch(url, file string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuSeconds is procstat.CPUSeconds, 0 when it cannot be read (the process
// has ended): the figures it feeds are printed, not checked.
func cpuSeconds(pid int) float64 {
	s, _ := procstat.CPUSeconds(pid)
	return s
}
