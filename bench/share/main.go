// Command share measures what reaching a file through a public link or a
// share costs against its owner reaching it: a GET of one large file (the
// owner's WebDAV GET vs the link page's download and the link's WebDAV GET)
// and a Depth 1 PROPFIND of a folder of many entries (the owner's WebDAV vs
// the link's WebDAV, and vs the WebDAV of the user the folder is shared
// with), on one in-process daemon. Each pair is measured in interleaved
// rounds (the owner first in even rounds, second in odd ones), so a busy
// machine's stalls fall on both sides; the figures are the medians.
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
	"slices"
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
	rounds := flag.Int("rounds", 5, "interleaved runs of each pair (the medians count)")
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

// do sends one request as user (password user+"-pass", admin's own; ""
// for none) and reads the whole answer.
func (b bench) do(ctx context.Context, method, path string, body io.Reader, n int64, hdr map[string]string, user string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, body)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.ContentLength = n
	}
	switch user {
	case "":
	case "admin":
		req.SetBasicAuth("admin", inproc.AdminPass)
	default:
		req.SetBasicAuth(user, user+"-pass")
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

// post sends v as JSON to path as admin and decodes the 201's answer into out.
func (b bench) post(ctx context.Context, path string, v, out any) error {
	body, _ := json.Marshal(v)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("admin", inproc.AdminPass)
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %s", path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (b bench) link(ctx context.Context, path string) (string, error) {
	var l apitype.Link
	err := b.post(ctx, "/api/v1/links", apitype.NewLink{Path: path}, &l)
	return l.Token, err
}

// cost is one run's wall time and the process's CPU time (daemon and
// client alike: the client's share is the same on both sides of a pair).
type cost struct{ wall, cpu time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // cannot fail for RUSAGE_SELF
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pair runs own and other rounds times, interleaved, and returns the
// median costs of each.
func pair(rounds int, own, other func() error) (cost, cost, error) {
	var a, b []cost
	for i := 0; i < rounds; i++ {
		order := []struct {
			f    func() error
			into *[]cost
		}{{own, &a}, {other, &b}}
		if i%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, o := range order {
			start, cpu := time.Now(), cpuNow()
			if err := o.f(); err != nil {
				return cost{}, cost{}, err
			}
			*o.into = append(*o.into, cost{time.Since(start), cpuNow() - cpu})
		}
	}
	return median(a), median(b), nil
}

// median returns the median wall time and, apart, the median CPU time.
func median(cs []cost) cost {
	mid := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		if len(ds)%2 == 1 {
			return ds[len(ds)/2]
		}
		return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	var wall, cpu []time.Duration
	for _, c := range cs {
		wall, cpu = append(wall, c.wall), append(cpu, c.cpu)
	}
	return cost{mid(wall), mid(cpu)}
}

func run(ctx context.Context, size int64, entries, rounds int) error {
	d, err := inproc.Start(ctx, daemon.Options{Listen: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer d.Close()
	b := bench{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}, base: d.URL}
	// Random bytes, so deduplication never shortcuts the PUT.
	if _, err := b.do(ctx, "PUT", "/dav/big.bin", io.LimitReader(rand.NewChaCha8([32]byte{1}), size), size, nil, "admin"); err != nil {
		return err
	}
	if _, err := b.do(ctx, "MKCOL", "/dav/many", nil, 0, nil, "admin"); err != nil {
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
	// bob sees /many in his root: a read-only share.
	if err := b.post(ctx, "/api/v1/admin/users", apitype.NewUser{Name: "bob", Password: "bob-pass"}, nil); err != nil {
		return err
	}
	if err := b.post(ctx, "/api/v1/user-shares", apitype.NewUserShare{Path: "/many", User: "bob"}, nil); err != nil {
		return err
	}
	get := func(path, user string) func() error {
		return func() error {
			n, err := b.do(ctx, "GET", path, nil, 0, nil, user)
			if err == nil && n != size {
				err = fmt.Errorf("GET %s: %d bytes of %d", path, n, size)
			}
			return err
		}
	}
	propfind := func(path, user string) func() error {
		return func() error {
			n, err := b.do(ctx, "PROPFIND", path, nil, 0, map[string]string{"Depth": "1"}, user)
			if err == nil && n < int64(entries)*100 {
				err = fmt.Errorf("PROPFIND %s: %d bytes for %d entries", path, n, entries)
			}
			return err
		}
	}
	type row struct {
		name, who  string
		own, other cost
	}
	var rows []row
	for _, m := range []struct {
		name, who  string
		own, other func() error
	}{
		{"GET " + humanize.IBytes(uint64(size)), "link page download", get("/dav/big.bin", "admin"), get("/s/"+fileTok+"/dl", "")},
		{"GET " + humanize.IBytes(uint64(size)), "link WebDAV", get("/dav/big.bin", "admin"), get("/public.php/dav/files/"+fileTok+"/", "")},
		{"PROPFIND " + strconv.Itoa(entries) + " entries", "link WebDAV", propfind("/dav/many/", "admin"), propfind("/public.php/dav/files/"+dirTok+"/", "")},
		{"PROPFIND " + strconv.Itoa(entries) + " entries", "user share (bob's /dav/)", propfind("/dav/many/", "admin"), propfind("/dav/many/", "bob")},
	} {
		own, other, err := pair(rounds, m.own, m.other)
		if err != nil {
			return err
		}
		rows = append(rows, row{m.name, m.who, own, other})
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "median of %d, interleaved\tthrough\towner\tthrough it\tratio\towner CPU\tthrough it CPU\tCPU ratio\n", rounds)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", d.Seconds()*1000) }
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%.2f\n", r.name, r.who, ms(r.own.wall), ms(r.other.wall), r.other.wall.Seconds()/r.own.wall.Seconds(),
			ms(r.own.cpu), ms(r.other.cpu), r.other.cpu.Seconds()/r.own.cpu.Seconds())
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
				if _, err := b.do(ctx, "PUT", "/dav/many/f"+strconv.Itoa(i), bytes.NewReader(nil), 0, nil, "admin"); err != nil {
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
