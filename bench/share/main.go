// Command share measures what reaching a file through a public link costs
// against its owner reaching it: a GET of one large file (the owner's
// WebDAV GET vs the link page's download and the link's WebDAV GET) and a
// Depth 1 PROPFIND of a folder of many entries (the owner's WebDAV vs the
// link's WebDAV), on one in-process daemon. Each figure is the best of
// --rounds runs, so a busy machine's stalls do not decide it.
//
// Run it from the repository root: go run ./bench/share --size 1GiB --entries 10000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/apitype"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/inproc"
	"netdisk/daemon"
)

func main() {
	size := benchflag.Bytes("size", 1<<30, "size of the file GET")
	entries := flag.Int("entries", 10000, "entries of the folder PROPFIND")
	rounds := flag.Int("rounds", 3, "runs of each measurement (the best counts)")
	flag.Parse()
	if *size < 1 || *entries < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: --size, --entries and --rounds must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, int64(*size), *entries, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	hc   *http.Client
	base string
}

func (b bench) do(ctx context.Context, method, path string, body io.Reader, n int64, hdr map[string]string, auth bool) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.ContentLength = n
	}
	if auth {
		req.SetBasicAuth("admin", inproc.AdminPass)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return got, err
	}
	if resp.StatusCode/100 != 2 {
		return got, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return got, nil
}

func (b bench) link(ctx context.Context, path string) (string, error) {
	body, _ := json.Marshal(apitype.NewLink{Path: path})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/api/v1/links", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", inproc.AdminPass)
	resp, err := b.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var l apitype.Link
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("POST /api/v1/links %s: %s %v", path, resp.Status, err)
	}
	return l.Token, nil
}

// best runs f rounds times and returns its shortest run.
func best(rounds int, f func() error) (time.Duration, error) {
	var min time.Duration
	for i := 0; i < rounds; i++ {
		start := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if d := time.Since(start); i == 0 || d < min {
			min = d
		}
	}
	return min, nil
}

func run(ctx context.Context, size int64, entries, rounds int) error {
	d, err := inproc.Start(ctx, daemon.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer d.Close()
	b := bench{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}, base: d.URL}
	// Random bytes, so deduplication never shortcuts the PUT.
	if _, err := b.do(ctx, "PUT", "/dav/big.bin", io.LimitReader(rand.NewChaCha8([32]byte{1}), size), size, nil, true); err != nil {
		return err
	}
	if _, err := b.do(ctx, "MKCOL", "/dav/many", nil, 0, nil, true); err != nil {
		return err
	}
	if err := fill(ctx, b, entries); err != nil {
		return err
	}
	fileTok, err := b.link(ctx, "/big.bin")
	if err != nil {
		return err
	}
	dirTok, err := b.link(ctx, "/many")
	if err != nil {
		return err
	}
	get := func(path string, auth bool) func() error {
		return func() error {
			n, err := b.do(ctx, "GET", path, nil, 0, nil, auth)
			if err == nil && n != size {
				err = fmt.Errorf("GET %s: %d bytes of %d", path, n, size)
			}
			return err
		}
	}
	propfind := func(path string, auth bool) func() error {
		return func() error {
			_, err := b.do(ctx, "PROPFIND", path, nil, 0, map[string]string{"Depth": "1"}, auth)
			return err
		}
	}
	type row struct {
		name      string
		own, link time.Duration
	}
	var rows []row
	for _, m := range []struct {
		name      string
		own, link func() error
	}{
		{"GET " + humanize.IBytes(uint64(size)) + " (page download)", get("/dav/big.bin", true), get("/s/"+fileTok+"/dl", false)},
		{"GET " + humanize.IBytes(uint64(size)) + " (link WebDAV)", get("/dav/big.bin", true), get("/public.php/dav/files/"+fileTok+"/", false)},
		{"PROPFIND " + strconv.Itoa(entries) + " entries", propfind("/dav/many/", true), propfind("/public.php/dav/files/"+dirTok+"/", false)},
	} {
		own, err := best(rounds, m.own)
		if err != nil {
			return err
		}
		link, err := best(rounds, m.link)
		if err != nil {
			return err
		}
		rows = append(rows, row{m.name, own, link})
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "best of %d\towner\tpublic link\tlink/owner\n", rounds)
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%v\t%v\t%.2f\n", r.name, r.own.Round(time.Millisecond), r.link.Round(time.Millisecond), r.link.Seconds()/r.own.Seconds())
	}
	return w.Flush()
}

// fill puts entries empty files into /many over 8 connections.
func fill(ctx context.Context, b bench, entries int) error {
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := b.do(ctx, "PUT", "/dav/many/f"+strconv.Itoa(i), bytes.NewReader(nil), 0, nil, true); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := 0; i < entries; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
