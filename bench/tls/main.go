// Command tls measures what HTTPS costs netdisk: one large file PUT and GET
// and many 4 KiB GETs over 8 connections, against `netdisk serve` daemons
// (the binary, each its own process) in the same run: plain HTTP/1.1,
// HTTPS with HTTP/1.1 and HTTPS with HTTP/2 (a self-signed certificate,
// pinned). The two HTTPS modes tell what TLS costs apart from what HTTP/2's
// framing and flow control cost. Beside each speed it gives the CPU time
// the daemon and this client spent per GiB: on one machine the client's
// decryption counts against HTTPS's speed, where a daemon serving clients
// elsewhere pays only its own share. Rounds are interleaved (each round
// runs every mode once) and the table gives each figure's median, so a
// burst of load from elsewhere on the machine skews one round of every mode
// rather than all rounds of one.
//
// Run it from the repository root: go run ./bench/tls --size 1GiB --rounds 3
// (--bin to measure another build of netdisk; --cpuprofile FILE profiles
// the client).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/procstat"
	"netdisk/client"
	"netdisk/internal/tlsconf"
	"netdisk/testutil"
)

const adminPass = "bench-admin-pass"

// mode is one way of reaching the daemon.
type mode struct {
	name  string
	tls   bool
	http2 bool
}

var modes = []mode{{"HTTP/1.1", false, false}, {"HTTPS HTTP/1.1", true, false}, {"HTTPS HTTP/2", true, true}}

func main() {
	size := benchflag.Bytes("size", 1<<30, "size of the large file PUT and GET on each daemon")
	small := flag.Duration("small-for", 10*time.Second, "how long each daemon serves 4 KiB GETs")
	conns := flag.Int("conns", 8, "connections (HTTP/1.1) or streams (HTTP/2) of the 4 KiB GETs")
	rounds := flag.Int("rounds", 3, "rounds, each running every mode once; the table gives medians")
	only := flag.String("modes", "", "comma-separated subset of the modes to run (http, https1, https2; default all)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the client's side of the run to this file")
	bin := flag.String("bin", "", "netdisk binary to measure (default: built from this tree)")
	flag.Parse()
	if *size < 1 || *conns < 1 || *small <= 0 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: --size, --conns, --small-for and --rounds must be positive")
		os.Exit(2)
	}
	run := modes
	if *only != "" {
		keys := map[string]mode{"http": modes[0], "https1": modes[1], "https2": modes[2]}
		run = nil
		for _, k := range strings.Split(*only, ",") {
			m, ok := keys[strings.TrimSpace(k)]
			if !ok {
				fmt.Fprintf(os.Stderr, "bench: --modes: unknown mode %q (http, https1, https2)\n", k)
				os.Exit(2)
			}
			run = append(run, m)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if err := bench(ctx, *bin, run, int64(*size), *small, *conns, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type result struct {
	put, get             float64 // MiB/s
	putDaemon, getDaemon float64 // the daemon's CPU seconds per GiB
	putClient, getClient float64 // this client's CPU seconds per GiB
	smallOps             float64 // per second
}

// cpuTime is the CPU time this process (the client) has used: on a machine
// shared with other work it says what a transfer costs better than its
// wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpu reads the CPU time of the daemon and of this client.
type cpu struct {
	pid            int
	daemon, client float64
}

func (c *cpu) read() {
	c.daemon, _ = procstat.CPUSeconds(c.pid)
	c.client = cpuTime().Seconds()
}

func bench(ctx context.Context, bin string, run []mode, size int64, smallFor time.Duration, conns, rounds int) error {
	// A self-signed pair made beforehand, so its fingerprint is known
	// before the daemon serves.
	certDir, err := os.MkdirTemp("", "netdisk-bench-tls-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(certDir)
	certFile, keyFile, err := tlsconf.SelfSigned(certDir, nil, time.Now())
	if err != nil {
		return err
	}
	if bin == "" {
		fmt.Fprintln(os.Stderr, "building netdisk")
		if bin, err = testutil.BuildBinary(ctx, certDir); err != nil {
			return err
		}
	}
	res := make([][]result, len(run))
	for r := range rounds {
		for i, m := range run {
			var args []string
			if m.tls {
				args = []string{"--tls-cert", certFile, "--tls-key", keyFile}
			}
			data, err := os.MkdirTemp("", "netdisk-bench-tls-data-")
			if err != nil {
				return err
			}
			d, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: bin, DataDir: data, AdminPass: adminPass, LogLevel: "warn", Output: os.Stderr, Args: args})
			if err != nil {
				os.RemoveAll(data)
				return err
			}
			hc, err := newClient(certFile, keyFile, m, conns)
			var got result
			if err == nil {
				got, err = measure(ctx, hc, d.URL, d.Pid(), size, smallFor, conns, m.http2)
			}
			d.Stop()
			os.RemoveAll(data)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-15s PUT %5.0f MiB/s (CPU s/GiB daemon %4.2f client %4.2f)  GET %5.0f MiB/s (daemon %4.2f client %4.2f)  4 KiB GET %6.0f/s\n",
				r+1, m.name, got.put, got.putDaemon, got.putClient, got.get, got.getDaemon, got.getClient, got.smallOps)
			res[i] = append(res[i], got)
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s file, 4 KiB GETs over %d connections, median of %d rounds\n", humanize.IBytes(uint64(size)), conns, rounds)
	fmt.Fprint(w, "\t")
	for _, m := range run {
		fmt.Fprintf(w, "%s\t", m.name)
	}
	fmt.Fprintln(w)
	row := func(name string, f func(result) float64, format string) {
		fmt.Fprint(w, name+"\t")
		var base float64
		for i, m := range run {
			v := median(res[i], f)
			if i == 0 {
				base = v
			}
			if m.tls && !run[0].tls {
				fmt.Fprintf(w, format+" (%.2f×)\t", v, v/base)
			} else {
				fmt.Fprintf(w, format+"\t", v)
			}
		}
		fmt.Fprintln(w)
	}
	row("PUT MiB/s", func(r result) float64 { return r.put }, "%.0f")
	row("GET MiB/s", func(r result) float64 { return r.get }, "%.0f")
	row("4 KiB GET/s", func(r result) float64 { return r.smallOps }, "%.0f")
	row("PUT daemon CPU s/GiB", func(r result) float64 { return r.putDaemon }, "%.2f")
	row("PUT client CPU s/GiB", func(r result) float64 { return r.putClient }, "%.2f")
	row("GET daemon CPU s/GiB", func(r result) float64 { return r.getDaemon }, "%.2f")
	row("GET client CPU s/GiB", func(r result) float64 { return r.getClient }, "%.2f")
	return w.Flush()
}

func median(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// client trusts the daemon's self-signed certificate by its fingerprint, as
// a user's --tls-fingerprint does, and speaks the protocol m names.
func newClient(certFile, keyFile string, m mode, conns int) (*http.Client, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	if !m.http2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	} else {
		tr.ForceAttemptHTTP2 = true
		tr.HTTP2 = client.HTTP2Config() // as netdisk's own clients

	}
	if m.tls {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg, err := tlsconf.Client(tlsconf.ClientOptions{Fingerprint: tlsconf.Fingerprint(c.Certificate[0])})
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr}, nil
}

func do(ctx context.Context, hc *http.Client, method, url string, body io.Reader, n int64, http2 bool) error {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.ContentLength = n
	req.SetBasicAuth("admin", adminPass)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// 32 KiB at a time, as netdisk pull (io.Copy into the file) reads:
	// io.Discard alone would read 8 KiB at a time, and Go's HTTP/2
	// client sends the server a window update for every 4 KiB read.
	bp := readBufs.Get().(*[]byte)
	_, err = io.CopyBuffer(struct{ io.Writer }{io.Discard}, resp.Body, *bp)
	readBufs.Put(bp)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	if want := map[bool]int{false: 1, true: 2}[http2]; resp.ProtoMajor != want {
		return fmt.Errorf("%s %s: answered over %s, want HTTP/%d", method, url, resp.Proto, want)
	}
	return nil
}

// settle waits (up to 10 s) until the daemon has used no CPU for 200 ms:
// what a PUT leaves to do in the background (its checksums, the database's
// checkpoint) is not the GET's cost.
func settle(ctx context.Context, pid int) {
	last, _ := procstat.CPUSeconds(pid)
	for range 50 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		now, _ := procstat.CPUSeconds(pid)
		if now == last {
			return
		}
		last = now
	}
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func measure(ctx context.Context, hc *http.Client, base string, pid int, size int64, smallFor time.Duration, conns int, http2 bool) (result, error) {
	var r result
	rate := func(d time.Duration) float64 { return float64(size) / d.Seconds() / (1 << 20) }
	// Random bytes, so deduplication never shortcuts the PUT.
	src := io.LimitReader(rand.NewChaCha8([32]byte{1}), size)
	perGiB := func(s float64) float64 { return s * (1 << 30) / float64(size) }
	// The first request checks the password (bcrypt), outside the figures.
	small := io.LimitReader(rand.NewChaCha8([32]byte{2}), 4<<10)
	if err := do(ctx, hc, "PUT", base+"/dav/small.bin", small, 4<<10, http2); err != nil {
		return r, err
	}
	before, after := cpu{pid: pid}, cpu{pid: pid}
	start := time.Now()
	before.read()
	if err := do(ctx, hc, "PUT", base+"/dav/big.bin", src, size, http2); err != nil {
		return r, err
	}
	after.read()
	r.put, r.putDaemon, r.putClient = rate(time.Since(start)), perGiB(after.daemon-before.daemon), perGiB(after.client-before.client)
	settle(ctx, pid)
	start = time.Now()
	before.read()
	if err := do(ctx, hc, "GET", base+"/dav/big.bin", nil, 0, http2); err != nil {
		return r, err
	}
	after.read()
	r.get, r.getDaemon, r.getClient = rate(time.Since(start)), perGiB(after.daemon-before.daemon), perGiB(after.client-before.client)

	var ops atomic.Int64
	var firstErr error
	var once sync.Once
	sctx, cancel := context.WithTimeout(ctx, smallFor)
	defer cancel()
	var wg sync.WaitGroup
	start = time.Now()
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sctx.Err() == nil {
				if err := do(sctx, hc, "GET", base+"/dav/small.bin", nil, 0, http2); err != nil {
					if sctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	r.smallOps = float64(ops.Load()) / time.Since(start).Seconds()
	return r, firstErr
}
