// Command tls measures what HTTPS costs netdisk: one large file PUT and GET
// and many 4 KiB GETs over 8 connections, against two in-process daemons
// in the same run, one plain HTTP and one HTTPS (a self-signed
// certificate, pinned). Both use HTTP/1.1 with the same connections so the
// difference is TLS itself, not HTTP/2's multiplexing.
//
// Run it from the repository root: go run ./bench/tls --size 1GiB
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
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/inproc"
	"netdisk/daemon"
	"netdisk/internal/tlsconf"
)

func main() {
	size := benchflag.Bytes("size", 1<<30, "size of the large file PUT and GET on each daemon")
	small := flag.Duration("small-for", 10*time.Second, "how long each daemon serves 4 KiB GETs")
	conns := flag.Int("conns", 8, "connections of the 4 KiB GETs")
	flag.Parse()
	if *size < 1 || *conns < 1 || *small <= 0 {
		fmt.Fprintln(os.Stderr, "bench: --size, --conns and --small-for must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, int64(*size), *small, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type result struct {
	put, get time.Duration
	smallOps float64 // per second
}

func run(ctx context.Context, size int64, smallFor time.Duration, conns int) error {
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
	var res [2]result
	for i, useTLS := range []bool{false, true} {
		o := daemon.Options{Listen: "127.0.0.1:0"}
		if useTLS {
			o.TLSCert, o.TLSKey = certFile, keyFile
		}
		d, err := inproc.Start(ctx, o)
		if err != nil {
			return err
		}
		hc, err := client(certFile, keyFile, useTLS, conns)
		if err != nil {
			d.Close()
			return err
		}
		res[i], err = measure(ctx, hc, d.URL, size, smallFor, conns)
		d.Close()
		if err != nil {
			return err
		}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%s file, 4 KiB GETs over %d connections, HTTP/1.1\n", humanize.IBytes(uint64(size)), conns)
	fmt.Fprintln(w, "\tHTTP\tHTTPS\tHTTPS/HTTP")
	rate := func(d time.Duration) float64 { return float64(size) / d.Seconds() / (1 << 20) }
	fmt.Fprintf(w, "PUT MiB/s\t%.0f\t%.0f\t%.2f\n", rate(res[0].put), rate(res[1].put), rate(res[1].put)/rate(res[0].put))
	fmt.Fprintf(w, "GET MiB/s\t%.0f\t%.0f\t%.2f\n", rate(res[0].get), rate(res[1].get), rate(res[1].get)/rate(res[0].get))
	fmt.Fprintf(w, "4 KiB GET/s\t%.0f\t%.0f\t%.2f\n", res[0].smallOps, res[1].smallOps, res[1].smallOps/res[0].smallOps)
	return w.Flush()
}

// client trusts the daemon's self-signed certificate by its fingerprint, as
// a user's --tls-fingerprint does.
func client(certFile, keyFile string, useTLS bool, conns int) (*http.Client, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}} // HTTP/1.1 on both sides
	if useTLS {
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

func do(ctx context.Context, hc *http.Client, method, url string, body io.Reader, n int64) error {
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
	return nil
}

func measure(ctx context.Context, hc *http.Client, base string, size int64, smallFor time.Duration, conns int) (result, error) {
	var r result
	// Random bytes, so deduplication never shortcuts the PUT.
	src := io.LimitReader(rand.NewChaCha8([32]byte{1}), size)
	start := time.Now()
	if err := do(ctx, hc, "PUT", base+"/dav/big.bin", src, size); err != nil {
		return r, err
	}
	r.put = time.Since(start)
	start = time.Now()
	if err := do(ctx, hc, "GET", base+"/dav/big.bin", nil, 0); err != nil {
		return r, err
	}
	r.get = time.Since(start)

	small := io.LimitReader(rand.NewChaCha8([32]byte{2}), 4<<10)
	if err := do(ctx, hc, "PUT", base+"/dav/small.bin", small, 4<<10); err != nil {
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
				if err := do(sctx, hc, "GET", base+"/dav/small.bin", nil, 0); err != nil {
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
