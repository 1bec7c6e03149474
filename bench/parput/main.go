// Command parput measures the daemon's peak memory under parallel large
// uploads: n WebDAV PUTs of size bytes each (distinct content, streamed, not
// held by the benchmark) at once, then the daemon's peak RSS (VmHWM). With
// -heap it also saves the daemon's heap profile taken while the uploads run
// (through its --pprof listener).
//
//	go run ./bench/parput                      # 8 × 256 MiB
//	go run ./bench/parput -heap /tmp/heap.pb.gz && go tool pprof -top -sample_index=inuse_space /tmp/heap.pb.gz
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
	"path/filepath"
	"sync"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/procstat"
	"netdisk/testutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "parput:", err)
		os.Exit(1)
	}
}

const pprofAddr = "127.0.0.1:6062"

func run() error {
	size := benchflag.Bytes("size", 256<<20, "size of each file")
	n := flag.Int("n", 8, "uploads at once")
	heap := flag.String("heap", "", "save the daemon's heap profile, taken halfway through, to this file")
	bin := flag.String("bin", "", "netdisk binary (default: built from this tree)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "parput-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		if *bin, err = testutil.BuildBinary(context.Background(), dir); err != nil {
			return err
		}
	}
	d, err := testutil.LaunchDaemon(context.Background(), testutil.DaemonConfig{Bin: *bin, DataDir: filepath.Join(dir, "data"),
		AdminPass: "bench-admin-pass", LogLevel: "warn", Output: os.Stderr, Args: []string{"--pprof", pprofAddr}})
	if err != nil {
		return err
	}
	defer d.Stop()
	// One request first: the password checked once (parallel first
	// attempts count against the login throttle's limit in flight).
	if resp, err := d.Do(context.Background(), "PROPFIND", "/dav/", "admin", d.AdminPass, nil, map[string]string{"Depth": "0"}); err != nil {
		return err
	} else {
		resp.Body.Close()
	}
	base, _ := procstat.PeakRSS(d.Pid())
	block := make([]byte, 1<<20)
	rand.Read(block)
	var sent sync.WaitGroup
	var half sync.Once
	halfway := make(chan struct{})
	errc := make(chan error, *n)
	start := time.Now()
	for i := range *n {
		sent.Add(1)
		go func() {
			defer sent.Done()
			body := &blocks{block: block, seed: byte(i), left: int64(*size), onHalf: func() { half.Do(func() { close(halfway) }) }, half: int64(*size) / 2}
			req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("%s/dav/f%d.bin", d.URL, i), body)
			if err != nil {
				errc <- err
				return
			}
			req.ContentLength = int64(*size)
			req.SetBasicAuth("admin", d.AdminPass)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					err = fmt.Errorf("PUT f%d.bin: %s", i, resp.Status)
				}
			}
			errc <- err
		}()
	}
	var herr error
	if *heap != "" {
		<-halfway
		herr = fetch("http://"+pprofAddr+"/debug/pprof/heap", *heap)
	}
	sent.Wait()
	close(errc)
	for err := range errc {
		herr = errors.Join(herr, err)
	}
	if herr != nil {
		return herr
	}
	el := time.Since(start)
	hwm, err := procstat.PeakRSS(d.Pid())
	if err != nil {
		return err
	}
	fmt.Printf("%d × %s PUTs at once: %.0f MB/s; daemon peak RSS (VmHWM) %s (%s before)\n", *n, humanize.IBytes(uint64(*size)),
		float64(*n)*float64(*size)/el.Seconds()/1e6, humanize.IBytes(uint64(hwm)), humanize.IBytes(uint64(base)))
	return nil
}

// blocks streams left bytes of block, each 1 MiB made distinct (no
// deduplication within or across the files).
type blocks struct {
	block  []byte
	seed   byte
	left   int64
	i      int
	off    int
	half   int64
	onHalf func()
}

func (b *blocks) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.off == 0 {
		b.block[0], b.block[1], b.block[2] = byte(b.i), byte(b.i>>8), b.seed
	}
	m := copy(p, b.block[b.off:min(len(b.block), b.off+int(min(b.left, int64(len(b.block)-b.off))))])
	b.off += m
	if b.off == len(b.block) {
		b.off, b.i = 0, b.i+1
	}
	b.left -= int64(m)
	if b.left <= b.half {
		b.onHalf()
	}
	return m, nil
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
