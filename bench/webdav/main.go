// Command webdav benchmarks netdisk's WebDAV surface against rclone serve
// webdav on the same machine in the same run: PUT and GET of one large file
// (with each server's CPU-s per GiB PUT), many small PUTs, and PROPFIND
// Depth 1 of a large folder (time and bytes). Rounds alternate between the
// servers (A B A B …) and medians are reported, with the ratio
// netdisk/rclone, so a noisy machine affects both sides alike.
//
// GETs of one 4 KiB file on 8 keep-alive connections (requests per second)
// are measured against two more anchors: the plain golang.org/x/net/webdav
// server (webdav.Handler over webdav.Dir, Basic auth; this program run
// again as that server) and nginx serving the file as a static file behind
// Basic auth (left out when nginx is not installed).
//
// Run it from the repository root: go run ./bench/webdav (see docs/benchmarks.md).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchdata"
	"netdisk/bench/internal/procstat"
	"netdisk/testutil"
)

type config struct {
	size, big       int64
	rounds          int
	small, entries  int
	getTime         time.Duration
	out, netdiskBin string
	keep            bool
}

func main() {
	var c config
	var size, big string
	flag.StringVar(&size, "size", "1GiB", "size of the large file PUT and GET each round")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds per server (medians are reported)")
	flag.IntVar(&c.small, "small", 1000, "number of 4 KiB files PUT each round: one after another, 8 in parallel, and (netdisk) through the upload API")
	flag.IntVar(&c.entries, "entries", 10000, "entries in the folder listed by PROPFIND Depth 1")
	flag.StringVar(&big, "big", "0", "if not 0, PUT one file of this size to netdisk at the end and report its peak RSS (e.g. 10GiB)")
	flag.StringVar(&c.out, "out", "", "also write the report to this file")
	flag.StringVar(&c.netdiskBin, "netdisk-bin", "", "use this netdisk binary instead of building ./cmd/netdisk")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary data directories and server logs")
	flag.DurationVar(&c.getTime, "get-time", 3*time.Second, "how long each server answers GETs of a 4 KiB file on 8 connections each round (0: skip)")
	xnetRoot := flag.String(serveXNetFlag, "", "internal: serve this directory as the plain x/net/webdav anchor")
	flag.Parse()
	if *xnetRoot != "" {
		serveXNet(*xnetRoot)
		return
	}
	var err error
	if c.size, err = parseSize(size); err == nil {
		c.big, err = parseSize(big)
	}
	if err == nil && (c.rounds < 1 || c.small < 0 || c.entries < 0 || c.size < 1) {
		err = fmt.Errorf("--rounds must be ≥ 1, --size ≥ 1 byte, --small and --entries ≥ 0")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report, err := run(ctx, c)
	if report != "" {
		fmt.Print(report)
		if c.out != "" {
			if werr := os.WriteFile(c.out, []byte(report), 0o644); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseSize(s string) (int64, error) {
	if s == "0" {
		return 0, nil
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	return int64(n), nil
}

func run(ctx context.Context, c config) (string, error) {
	work, err := os.MkdirTemp("", "netdisk-bench-")
	if err != nil {
		return "", err
	}
	if c.keep {
		fmt.Fprintln(os.Stderr, "keeping", work)
	} else {
		defer os.RemoveAll(work)
	}
	bin := c.netdiskBin
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building ./cmd/netdisk …")
		if bin, err = testutil.BuildBinary(ctx, work); err != nil {
			return "", err
		}
	}
	client := newClient()
	nd, err := startNetdisk(ctx, bin, work)
	if err != nil {
		return "", err
	}
	defer nd.stop()
	rc, err := startRclone(ctx, work)
	if err != nil {
		return "", err
	}
	defer rc.stop()
	servers := []*server{nd, rc}
	getServers := servers
	if c.getTime > 0 {
		xn, err := startXNet(ctx, work)
		if err != nil {
			return "", err
		}
		defer xn.stop()
		getServers = append(getServers, &xn.server)
		ng, err := startNginxStatic(ctx, work)
		if err != nil {
			return "", err
		}
		if ng != nil {
			defer ng.stop()
			getServers = append(getServers, &ng.server)
		} else {
			fmt.Fprintln(os.Stderr, "nginx not found: the 4 KiB GET has no nginx anchor")
		}
	}

	random := make([]byte, blockSize)
	rand.Read(random)
	nonce := uint64(time.Now().UnixNano()) << 8 // fresh data in every run and round

	if c.entries > 0 {
		for _, s := range servers {
			fmt.Fprintf(os.Stderr, "%s: creating %d entries in /many …\n", s.name, c.entries)
			if err := fillFolder(ctx, client, s, c.entries); err != nil {
				return "", fmt.Errorf("%s: fill folder: %w", s.name, err)
			}
		}
	}
	small4k := make([]byte, 4096)
	rand.Read(small4k)
	if c.getTime > 0 {
		for _, s := range getServers {
			var err error
			if s.name == "nginx" {
				err = os.WriteFile(filepath.Join(work, "nginx-root", "get4k.bin"), small4k, 0o644)
			} else {
				err = put(ctx, client, s, "/get4k.bin", bytes.NewReader(small4k), int64(len(small4k)))
			}
			if err != nil {
				return "", fmt.Errorf("%s: %w", s.name, err)
			}
		}
	}
	samples := map[string][]sample{}
	gets := map[string][]float64{}   // req/s per round
	getCPU := map[string][]float64{} // the server's CPU µs per GET per round
	for r := range c.rounds {
		if c.getTime > 0 {
			for _, s := range getServers {
				fmt.Fprintf(os.Stderr, "round %d/%d: 4 KiB GETs, %s\n", r+1, c.rounds, s.name)
				rps, cpu, err := getLoad(ctx, s, "/get4k.bin", 8, c.getTime, len(small4k))
				if err != nil {
					return "", err
				}
				gets[s.name] = append(gets[s.name], rps)
				getCPU[s.name] = append(getCPU[s.name], float64(cpu)/float64(time.Microsecond))
			}
		}
		for i, s := range servers {
			fmt.Fprintf(os.Stderr, "round %d/%d: %s\n", r+1, c.rounds, s.name)
			seed := nonce + uint64(r*len(servers)+i)
			var smp sample
			settle()
			if err := bigPutGet(ctx, client, s, random, seed, c.size, &smp); err != nil {
				return "", fmt.Errorf("%s: %w", s.name, err)
			}
			if c.small > 0 {
				settle()
				var err error
				if smp.smallTotal, err = smallPuts(ctx, client, s, random, seed, c.small, 1, false); err == nil {
					if smp.smallPar, err = smallPuts(ctx, client, s, random, seed+1<<40, c.small, 8, false); err == nil {
						// rclone has no such API: its figure is a WebDAV PUT again.
						smp.smallAPI, err = smallPuts(ctx, client, s, random, seed+2<<40, c.small, 1, s.api != "")
					}
				}
				if err != nil {
					return "", fmt.Errorf("%s: %w", s.name, err)
				}
			}
			if c.entries > 0 {
				if err := listFolder(ctx, client, s, c.entries, &smp); err != nil {
					return "", err
				}
			}
			samples[s.name] = append(samples[s.name], smp)
		}
	}
	rss := map[string]int64{}
	for _, s := range servers {
		rss[s.name], _ = procstat.PeakRSS(s.pid())
	}
	var bigLine string
	if c.big > 0 {
		fmt.Fprintf(os.Stderr, "netdisk: PUT of %s for peak RSS …\n", humanize.IBytes(uint64(c.big)))
		var smp sample
		t0 := time.Now()
		if err := put(ctx, client, nd, "/huge.bin", newStream(random, nonce-1, c.big), c.big); err != nil {
			return "", fmt.Errorf("netdisk: big PUT: %w", err)
		}
		smp.putMBps = mbps(c.big, time.Since(t0))
		hwm, err := procstat.PeakRSS(nd.pid())
		if err != nil {
			return "", err
		}
		bigLine = fmt.Sprintf("netdisk PUT of %s: %.0f MB/s, peak RSS (VmHWM) after it %s\n",
			humanize.IBytes(uint64(c.big)), smp.putMBps, humanize.IBytes(uint64(hwm)))
	}
	return format(c, samples, gets, getCPU, getServers, rss, bigLine), nil
}

// settle writes back what earlier phases left in the page cache before a
// phase is timed: rclone answers a PUT before its bytes reach the disk, and
// the kernel's write-back of them could land in the next server's phase,
// where every fsync would wait behind it. Each phase then pays for its own
// deferred writes only.
func settle() { syscall.Sync() }

func pick(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func format(c config, samples map[string][]sample, gets, getCPU map[string][]float64, getServers []*server, rss map[string]int64, bigLine string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "netdisk vs rclone serve webdav — loopback, %d rounds interleaved, medians (MB = 10^6 bytes)\n\n", c.rounds)
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tnetdisk\trclone\tnetdisk/rclone")
	nd, rc := samples["netdisk"], samples["rclone"]
	row := func(name, unit string, f func(sample) float64, note func(float64) string) {
		a, z := benchdata.Median(pick(nd, f)), benchdata.Median(pick(rc, f))
		na, nz := note(a), note(z)
		fmt.Fprintf(tw, "%s (%s)\t%.1f%s\t%.1f%s\t%.2f×\n", name, unit, a, na, z, nz, a/z)
	}
	none := func(float64) string { return "" }
	size := humanize.IBytes(uint64(c.size))
	row("PUT "+size, "MB/s", func(s sample) float64 { return s.putMBps }, none)
	row("PUT "+size+" server CPU", "CPU-s per GiB, lower is better", func(s sample) float64 { return s.putCPU }, none)
	row("GET "+size, "MB/s", func(s sample) float64 { return s.getMBps }, none)
	if c.small > 0 {
		perOp := func(v float64) string { return fmt.Sprintf(" (%.2f/op)", v/float64(c.small)) }
		row(fmt.Sprintf("%d PUTs of 4 KiB, 1 connection", c.small), "ms total, lower is better", func(s sample) float64 { return ms(s.smallTotal) }, perOp)
		row(fmt.Sprintf("%d PUTs of 4 KiB, 8 parallel", c.small), "ms total, lower is better", func(s sample) float64 { return ms(s.smallPar) }, perOp)
		row(fmt.Sprintf("%d API one-request uploads of 4 KiB (rclone: PUT)", c.small), "ms total, lower is better", func(s sample) float64 { return ms(s.smallAPI) }, perOp)
	}
	if c.entries > 0 {
		row(fmt.Sprintf("PROPFIND Depth 1, %d entries", c.entries), "ms, lower is better", func(s sample) float64 { return ms(s.propfind) }, none)
		row(fmt.Sprintf("PROPFIND Depth 1, %d entries", c.entries), "MB, lower is better", func(s sample) float64 { return float64(s.propfindBytes) / 1e6 }, none)
	}
	tw.Flush()
	if len(gets) > 0 {
		fmt.Fprintf(&b, "\nGET of one 4 KiB file, 8 keep-alive connections, %s per server per round (req/s, medians)\n", c.getTime)
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "server\treq/s\tnetdisk/server\tCPU µs per GET\tper round (req/s | CPU µs)")
		ndm := benchdata.Median(gets["netdisk"])
		for _, s := range getServers {
			m := benchdata.Median(gets[s.name])
			fmt.Fprintf(tw, "%s\t%.0f\t%.2f×\t%.0f\t%.0f | %.0f\n", s.name, m, ndm/m, benchdata.Median(getCPU[s.name]), gets[s.name], getCPU[s.name])
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\npeak RSS (VmHWM) after the rounds: netdisk %s, rclone %s\n",
		humanize.IBytes(uint64(rss["netdisk"])), humanize.IBytes(uint64(rss["rclone"])))
	b.WriteString(bigLine)
	b.WriteString("\nper round (netdisk | rclone): PUT MB/s, GET MB/s, small ms (1 conn, 8 parallel, API), PROPFIND ms\n")
	for i := range nd {
		fmt.Fprintf(&b, "  %d: %.0f %.0f %.0f %.0f %.0f %.1f | %.0f %.0f %.0f %.0f %.0f %.1f\n", i+1,
			nd[i].putMBps, nd[i].getMBps, ms(nd[i].smallTotal), ms(nd[i].smallPar), ms(nd[i].smallAPI), ms(nd[i].propfind),
			rc[i].putMBps, rc[i].getMBps, ms(rc[i].smallTotal), ms(rc[i].smallPar), ms(rc[i].smallAPI), ms(rc[i].propfind))
	}
	return b.String()
}
