// Command sync benchmarks a sync client's first upload into netdisk against
// rclone's into rclone serve webdav, on the same machine in one run:
//
//	go run ./bench/sync                               # 10,000 files of 4 KiB, one 1 GiB file, 3 rounds
//	go run ./bench/sync -files 500 -size 64MiB -rounds 1   # a quick run
//
// Each round makes a new folder of -files small files (in 100 subfolders)
// and one of a single -size file, with content of their own, then:
//   - netdisk: nextcloudcmd syncs each folder into a new remote folder
//     (--path; a first sync: every file goes up, the large one through
//     chunked upload), then syncs the small files' folder again with
//     nothing changed;
//   - rclone: `rclone copy` of the same folders to `rclone serve webdav`
//     (Debian rclone, --transfers 6, nextcloudcmd's parallel uploads), then
//     the small files' folder again with nothing changed.
//
// The servers alternate within each round (netdisk, then rclone), and the
// report gives each measurement's median over the rounds with the ratio of
// the times (netdisk/rclone: below 1 netdisk is faster). Each server's CPU
// time is read around each measurement. After every first sync the files
// arrived are counted on the server.
package main

import (
	"context"
	"encoding/binary"
	"encoding/xml"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchdata"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/procstat"
	"netdisk/testutil"
)

func main() {
	files := flag.Int("files", 10000, "small files synced each round")
	small := benchflag.Bytes("small-size", 4<<10, "size of each small file")
	size := benchflag.Bytes("size", 1<<30, "size of the large file synced each round (0: none)")
	rounds := flag.Int("rounds", 3, "rounds (medians are reported)")
	netdiskBin := flag.String("netdisk-bin", "", "use this netdisk binary instead of building ./cmd/netdisk")
	keep := flag.Bool("keep", false, "keep the temporary folders and the servers' logs")
	flag.Parse()
	if *rounds < 1 || *files < 1 {
		fmt.Fprintln(os.Stderr, "bench/sync: --rounds and --files must be ≥ 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *files, int64(*small), int64(*size), *rounds, *netdiskBin, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench/sync:", err)
		os.Exit(1)
	}
}

// side is one server under test and how its client syncs a folder to it.
type side struct {
	name string
	pid  func() int
	// sync uploads local into the remote folder dst (new or unchanged).
	sync func(ctx context.Context, local, dst string) error
	// count returns how many files are below the remote folder dst.
	count func(ctx context.Context, dst string) (int, error)
}

// measured is one timing with the server's CPU seconds during it.
type measured struct{ secs, cpu []float64 }

func (m *measured) add(d time.Duration, cpu float64) {
	m.secs = append(m.secs, d.Seconds())
	m.cpu = append(m.cpu, cpu)
}

func run(ctx context.Context, files int, small, size int64, rounds int, bin string, keep bool) error {
	nc, err := exec.LookPath("nextcloudcmd")
	if err != nil {
		return fmt.Errorf("nextcloudcmd (Debian nextcloud-desktop-cmd): %w", err)
	}
	rcloneBin, err := exec.LookPath("rclone")
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "netdisk-bench-sync-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "keeping", work)
	} else {
		defer os.RemoveAll(work)
	}
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building ./cmd/netdisk …")
		if bin, err = testutil.BuildBinary(ctx, work); err != nil {
			return err
		}
	}

	ndLog, err := os.Create(filepath.Join(work, "netdisk.log"))
	if err != nil {
		return err
	}
	defer ndLog.Close()
	d, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: bin, DataDir: filepath.Join(work, "netdisk-data"),
		AdminPass: "bench-admin-pass", LogLevel: "warn", Args: []string{"--gc-interval", "0"}, Output: ndLog})
	if err != nil {
		return err
	}
	defer d.Stop()
	rcRoot := filepath.Join(work, "rclone-root")
	if err := os.MkdirAll(rcRoot, 0o700); err != nil {
		return err
	}
	rcLog, err := os.Create(filepath.Join(work, "rclone.log"))
	if err != nil {
		return err
	}
	defer rcLog.Close()
	rc, err := testutil.LaunchRcloneWebDAV(ctx, rcRoot, "bench", "bench-pass", rcLog)
	if err != nil {
		return err
	}
	defer rc.Stop()
	obscured, err := exec.CommandContext(ctx, rcloneBin, "obscure", rc.Pass).Output()
	if err != nil {
		return fmt.Errorf("rclone obscure: %w", err)
	}

	netdisk := side{
		name: "netdisk (nextcloudcmd)",
		pid:  d.Pid,
		sync: func(ctx context.Context, local, dst string) error {
			resp, err := d.Do(ctx, "MKCOL", "/dav/"+dst, "admin", d.AdminPass, nil, nil)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusMethodNotAllowed {
				return fmt.Errorf("MKCOL /dav/%s: %s", dst, resp.Status)
			}
			out, err := testutil.SyncClient(ctx, nc, local, d.URL, "admin", d.AdminPass, "--path", "/"+dst)
			if err != nil {
				return fmt.Errorf("nextcloudcmd: %w\n%s", err, out[max(0, len(out)-2000):])
			}
			return nil
		},
		count: func(ctx context.Context, dst string) (int, error) { return davCount(ctx, d, "/dav/"+dst+"/") },
	}
	rclone := side{
		name: "rclone copy → rclone serve webdav",
		pid:  rc.Pid,
		sync: func(ctx context.Context, local, dst string) error {
			out, err := exec.CommandContext(ctx, rcloneBin, "copy", local, ":webdav:"+dst, "--config", "/dev/null",
				"--webdav-url", rc.URL, "--webdav-user", rc.User, "--webdav-pass", strings.TrimSpace(string(obscured)),
				"--transfers", "6", "--exclude", "/.sync_*", "--exclude", "/.home-*").CombinedOutput()
			if err != nil {
				return fmt.Errorf("rclone copy: %w\n%s", err, out)
			}
			return nil
		},
		count: func(ctx context.Context, dst string) (int, error) {
			n := 0
			err := filepath.WalkDir(filepath.Join(rcRoot, dst), func(_ string, de os.DirEntry, err error) error {
				if err == nil && de.Type().IsRegular() {
					n++
				}
				return err
			})
			return n, err
		},
	}
	sides := []side{netdisk, rclone}
	fmt.Printf("%d files of %s, one of %s, %d round(s); nextcloudcmd, rclone (--transfers 6); %s\n",
		files, humanize.IBytes(uint64(small)), humanize.IBytes(uint64(size)), rounds, time.Now().UTC().Format(time.RFC3339))

	type key struct{ what, side string }
	res := map[key]*measured{}
	timed := func(s side, what string, f func() error) error {
		cpu0, _ := procstat.CPUSeconds(s.pid())
		t0 := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s, %s: %w", s.name, what, err)
		}
		el := time.Since(t0)
		cpu1, _ := procstat.CPUSeconds(s.pid())
		k := key{what, s.name}
		if res[k] == nil {
			res[k] = &measured{}
		}
		res[k].add(el, cpu1-cpu0)
		fmt.Fprintf(os.Stderr, "  %-34s %-22s %v (server CPU %.1f s)\n", s.name, what, el.Round(time.Millisecond), cpu1-cpu0)
		return nil
	}
	const (
		first   = "first sync, small files"
		again   = "no-change sync"
		bigOnce = "first sync, large file"
	)
	for r := range rounds {
		smallDir := filepath.Join(work, fmt.Sprintf("small-%d", r))
		bigDir := filepath.Join(work, fmt.Sprintf("big-%d", r))
		fmt.Fprintf(os.Stderr, "round %d/%d: writing the folders …\n", r+1, rounds)
		for i := range files {
			sub := filepath.Join(smallDir, fmt.Sprintf("d%02d", i%100))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
			if err := benchdata.WriteRandom(filepath.Join(sub, fmt.Sprintf("f%05d", i)), seedKey(r, i), small); err != nil {
				return err
			}
		}
		if size > 0 {
			if err := os.MkdirAll(bigDir, 0o755); err != nil {
				return err
			}
			if err := benchdata.WriteRandom(filepath.Join(bigDir, "big.bin"), seedKey(r, -1), size); err != nil {
				return err
			}
		}
		for _, s := range sides {
			dst := fmt.Sprintf("small-%d", r)
			if err := timed(s, first, func() error { return s.sync(ctx, smallDir, dst) }); err != nil {
				return err
			}
			if n, err := s.count(ctx, dst); err != nil || n != files {
				return fmt.Errorf("%s: %d files arrived of %d (%v)", s.name, n, files, err)
			}
			if err := timed(s, again, func() error { return s.sync(ctx, smallDir, dst) }); err != nil {
				return err
			}
			if size > 0 {
				dst := fmt.Sprintf("big-%d", r)
				if err := timed(s, bigOnce, func() error { return s.sync(ctx, bigDir, dst) }); err != nil {
					return err
				}
				if n, err := s.count(ctx, dst); err != nil || n != 1 {
					return fmt.Errorf("%s: %d large files arrived (%v)", s.name, n, err)
				}
			}
		}
		// Each folder was written for this round only.
		os.RemoveAll(smallDir)
		os.RemoveAll(bigDir)
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "measurement\t%s\t%s\tnetdisk/rclone (time)\n", netdisk.name, rclone.name)
	rate := func(what string, secs float64) string {
		switch what {
		case first:
			return fmt.Sprintf("%.1f s, %.0f files/s", secs, float64(files)/secs)
		case bigOnce:
			return fmt.Sprintf("%.1f s, %.0f MB/s", secs, float64(size)/secs/1e6)
		}
		return fmt.Sprintf("%.2f s", secs)
	}
	for _, what := range []string{first, again, bigOnce} {
		a, b := res[key{what, netdisk.name}], res[key{what, rclone.name}]
		if a == nil || b == nil {
			continue
		}
		ma, mb := benchdata.Median(a.secs), benchdata.Median(b.secs)
		fmt.Fprintf(tw, "%s\t%s (CPU %.1f s)\t%s (CPU %.1f s)\t%.2f×\n", what,
			rate(what, ma), benchdata.Median(a.cpu), rate(what, mb), benchdata.Median(b.cpu), ma/mb)
	}
	tw.Flush()
	fmt.Println("(medians of the rounds; CPU: the server's own, user + system)")
	return nil
}

// davCount counts the files below the folder at path (ending in '/') with
// a PROPFIND Depth 1 per folder: a server may refuse Depth infinity over a
// large tree.
func davCount(ctx context.Context, d *testutil.Daemon, path string) (int, error) {
	resp, err := d.Do(ctx, "PROPFIND", path, "admin", d.AdminPass, nil, map[string]string{"Depth": "1"})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		return 0, fmt.Errorf("PROPFIND %s: %s", path, resp.Status)
	}
	var ms struct {
		Hrefs []string `xml:"response>href"`
	}
	if err := xml.NewDecoder(resp.Body).Decode(&ms); err != nil {
		return 0, err
	}
	n := 0
	for _, h := range ms.Hrefs {
		switch {
		case h == path:
		case strings.HasSuffix(h, "/"): // a folder's href ends in '/'
			k, err := davCount(ctx, d, h)
			if err != nil {
				return 0, err
			}
			n += k
		default:
			n++
		}
	}
	return n, nil
}

// seedKey is the ChaCha8 key of file i of round r (i = -1: the large file).
func seedKey(r, i int) [32]byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(time.Now().UnixNano()))
	binary.LittleEndian.PutUint64(key[8:], uint64(r))
	binary.LittleEndian.PutUint64(key[16:], uint64(int64(i)))
	return key
}
