// Command tls measures what HTTPS costs netdisk: one large file PUT and GET
// and many 4 KiB GETs over 8 connections, against in-process daemons in the
// same run: plain HTTP/1.1, HTTPS with HTTP/1.1 and HTTPS with HTTP/2 (a
// self-signed certificate, pinned). The two HTTPS modes tell what TLS costs
// apart from what HTTP/2's framing and flow control cost. Rounds are
// interleaved (each round runs every mode once) and the table gives each
// figure's median, so a burst of load from elsewhere on the machine skews
// one round of every mode rather than all rounds of one.
//
// Run it from the repository root: go run ./bench/tls --size 1GiB --rounds 3
// (--cpuprofile FILE profiles client and daemons, which share this process).
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
	"netdisk/bench/internal/inproc"
	"netdisk/client"
	"netdisk/daemon"
	"netdisk/internal/tlsconf"
)

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
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (client and daemons) to this file")
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
	if err := bench(ctx, run, int64(*size), *small, *conns, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type result struct {
	put, get       float64 // MiB/s
	putCPU, getCPU float64 // CPU seconds per GiB, client and daemon together
	smallOps       float64 // per second
}

// cpuTime is the CPU time this process (client and daemon) has used: on a
// machine shared with other work it says what a transfer costs better than
// its wall time does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func bench(ctx context.Context, run []mode, size int64, smallFor time.Duration, conns, rounds int) error {
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
	res := make([][]result, len(run))
	for r := range rounds {
		for i, m := range run {
			o := daemon.Options{Listen: "127.0.0.1:0"}
			if m.tls {
				o.TLSCert, o.TLSKey = certFile, keyFile
			}
			d, err := inproc.Start(ctx, o)
			if err != nil {
				return err
			}
			hc, err := newClient(certFile, keyFile, m, conns)
			if err != nil {
				d.Close()
				return err
			}
			got, err := measure(ctx, hc, d.URL, size, smallFor, conns, m.http2)
			d.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d %-15s PUT %5.0f MiB/s %5.2f CPU s/GiB  GET %5.0f MiB/s %5.2f CPU s/GiB  4 KiB GET %6.0f/s\n",
				r+1, m.name, got.put, got.putCPU, got.get, got.getCPU, got.smallOps)
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
	row("PUT CPU s/GiB", func(r result) float64 { return r.putCPU }, "%.2f")
	row("GET CPU s/GiB", func(r result) float64 { return r.getCPU }, "%.2f")
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
	req.SetBasicAuth("admin", inproc.AdminPass)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
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

func measure(ctx context.Context, hc *http.Client, base string, size int64, smallFor time.Duration, conns int, http2 bool) (result, error) {
	var r result
	rate := func(d time.Duration) float64 { return float64(size) / d.Seconds() / (1 << 20) }
	// Random bytes, so deduplication never shortcuts the PUT.
	src := io.LimitReader(rand.NewChaCha8([32]byte{1}), size)
	perGiB := func(d time.Duration) float64 { return d.Seconds() * (1 << 30) / float64(size) }
	start, cpu := time.Now(), cpuTime()
	if err := do(ctx, hc, "PUT", base+"/dav/big.bin", src, size, http2); err != nil {
		return r, err
	}
	r.put, r.putCPU = rate(time.Since(start)), perGiB(cpuTime()-cpu)
	start, cpu = time.Now(), cpuTime()
	if err := do(ctx, hc, "GET", base+"/dav/big.bin", nil, 0, http2); err != nil {
		return r, err
	}
	r.get, r.getCPU = rate(time.Since(start)), perGiB(cpuTime()-cpu)

	small := io.LimitReader(rand.NewChaCha8([32]byte{2}), 4<<10)
	if err := do(ctx, hc, "PUT", base+"/dav/small.bin", small, 4<<10, http2); err != nil {
		return r, err
	}
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
