package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"netdisk/bench/internal/procstat"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// newClient is a keep-alive client with large buffers, so the client side is
// not what limits throughput.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 16,
		DisableCompression:  true,
		WriteBufferSize:     256 << 10,
		ReadBufferSize:      256 << 10,
	}}
}

// stream yields size bytes from one shared random buffer without temp files.
// Every 64 KiB block starts with (seed, block index), so no two chunks of any
// upload are equal: the servers see new data, never a deduplicable repeat.
// Only the 16-byte header differs per block, so a Read is one copy.
type stream struct {
	buf       []byte // random, len = blockSize
	seed      uint64
	size, pos int64
	hdr       [16]byte
	cur       int64 // block whose index hdr holds, -1 before the first
}

const blockSize = 64 << 10

func newStream(random []byte, seed uint64, size int64) *stream {
	return &stream{buf: random[:blockSize], seed: seed, size: size, cur: -1}
}

func (s *stream) Read(p []byte) (int, error) {
	if s.pos >= s.size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && s.pos < s.size {
		bi, off := s.pos/blockSize, s.pos%blockSize
		end := min(blockSize, off+s.size-s.pos)
		var src []byte
		if off < int64(len(s.hdr)) {
			if bi != s.cur {
				binary.LittleEndian.PutUint64(s.hdr[0:], s.seed)
				binary.LittleEndian.PutUint64(s.hdr[8:], uint64(bi))
				s.cur = bi
			}
			src = s.hdr[off:min(int64(len(s.hdr)), end)]
		} else {
			src = s.buf[off:end]
		}
		m := copy(p[n:], src)
		n += m
		s.pos += int64(m)
	}
	return n, nil
}

func request(ctx context.Context, s *server, method, path string, body io.Reader, size int64, hdr map[string]string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
	}
	req.SetBasicAuth(s.user, s.pass)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req, nil
}

// send performs a request, drains the answer and checks the status class.
func send(c *http.Client, req *http.Request, okStatus ...int) (int64, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, fmt.Errorf("%s %s: reading answer: %w", req.Method, req.URL.Path, err)
	}
	for _, s := range okStatus {
		if resp.StatusCode == s {
			return n, nil
		}
	}
	return n, fmt.Errorf("%s %s: %s", req.Method, req.URL.Path, resp.Status)
}

func put(ctx context.Context, c *http.Client, s *server, path string, body io.Reader, size int64) error {
	req, err := request(ctx, s, "PUT", path, body, size, nil)
	if err != nil {
		return err
	}
	_, err = send(c, req, http.StatusCreated, http.StatusNoContent, http.StatusOK)
	return err
}

func mkcol(ctx context.Context, c *http.Client, s *server, path string) error {
	req, err := request(ctx, s, "MKCOL", path, nil, 0, nil)
	if err != nil {
		return err
	}
	_, err = send(c, req, http.StatusCreated)
	return err
}

func del(ctx context.Context, c *http.Client, s *server, path string) error {
	req, err := request(ctx, s, "DELETE", path, nil, 0, nil)
	if err != nil {
		return err
	}
	_, err = send(c, req, http.StatusNoContent, http.StatusOK)
	return err
}

// propfind returns the status and body of a PROPFIND (allprop) at depth.
func propfind(ctx context.Context, c *http.Client, s *server, path, depth string) (int, []byte, error) {
	req, err := request(ctx, s, "PROPFIND", path, nil, 0, map[string]string{"Depth": depth})
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// measured results of one round on one server.
type sample struct {
	putMBps, getMBps float64
	smallTotal       time.Duration // one connection, one PUT after another
	smallPar         time.Duration // 8 connections in parallel
	smallAPI         time.Duration // netdisk: the upload API's one-request upload (rclone: WebDAV PUT again)
	propfind         time.Duration
	propfindBytes    int
	putCPU           float64 // the server's CPU-s (user + system) per GiB PUT
}

func mbps(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

// bigPutGet uploads size fresh bytes, downloads them, and deletes the file.
func bigPutGet(ctx context.Context, c *http.Client, s *server, random []byte, seed uint64, size int64, smp *sample) error {
	path := fmt.Sprintf("/big-%d.bin", seed)
	cpu0, err := procstat.CPUSeconds(s.pid())
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := put(ctx, c, s, path, newStream(random, seed, size), size); err != nil {
		return err
	}
	smp.putMBps = mbps(size, time.Since(t0))
	cpu1, err := procstat.CPUSeconds(s.pid())
	if err != nil {
		return err
	}
	smp.putCPU = (cpu1 - cpu0) / (float64(size) / (1 << 30))
	req, err := request(ctx, s, "GET", path, nil, 0, nil)
	if err != nil {
		return err
	}
	t0 = time.Now()
	n, err := send(c, req, http.StatusOK)
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%s: GET %s returned %d bytes, want %d", s.name, path, n, size)
	}
	smp.getMBps = mbps(n, time.Since(t0))
	return del(ctx, c, s, path)
}

// smallPuts uploads count 4 KiB files into a new folder, parallel at a time
// (1: one after another on one keep-alive connection), and returns the time
// taken. With api (netdisk only) each file goes through the upload API's
// one-request upload instead of a WebDAV PUT.
func smallPuts(ctx context.Context, c *http.Client, s *server, random []byte, seed uint64, count, parallel int, api bool) (time.Duration, error) {
	dir := fmt.Sprintf("/small-%d", seed)
	if err := mkcol(ctx, c, s, dir); err != nil {
		return 0, err
	}
	one := func(i int) error {
		body := newStream(random, seed<<20|uint64(i), 4096)
		p := fmt.Sprintf("%s/f%05d", dir, i)
		if !api {
			return put(ctx, c, s, p, body, 4096)
		}
		req, err := http.NewRequestWithContext(ctx, "PUT", s.api+"/api/v1/file/upload?path="+p, body)
		if err != nil {
			return err
		}
		req.ContentLength = 4096
		req.SetBasicAuth(s.user, s.pass)
		_, err = send(c, req, http.StatusOK)
		return err
	}
	t0 := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i := range count {
		if parallel == 1 {
			if err := one(i); err != nil {
				return 0, err
			}
			continue
		}
		g.Go(func() error { return one(i) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// fillFolder creates /many with entries tiny files, 8 uploads at a time.
func fillFolder(ctx context.Context, c *http.Client, s *server, entries int) error {
	if err := mkcol(ctx, c, s, "/many"); err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range entries {
		g.Go(func() error {
			b := fmt.Appendf(nil, "entry %d\n", i)
			return put(ctx, c, s, fmt.Sprintf("/many/entry-%05d.txt", i), bytes.NewReader(b), int64(len(b)))
		})
	}
	return g.Wait()
}

// listFolder times one PROPFIND Depth 1 of /many and checks it lists everything.
func listFolder(ctx context.Context, c *http.Client, s *server, entries int, smp *sample) error {
	t0 := time.Now()
	st, body, err := propfind(ctx, c, s, "/many/", "1")
	smp.propfind = time.Since(t0)
	smp.propfindBytes = len(body)
	if err != nil {
		return err
	}
	if st != http.StatusMultiStatus {
		return fmt.Errorf("%s: PROPFIND /many/: status %d", s.name, st)
	}
	// Each response has an opening and a closing href tag, whatever the prefix.
	if got := strings.Count(string(body), "href>") / 2; got != entries+1 {
		return fmt.Errorf("%s: PROPFIND /many/ listed %d responses, want %d", s.name, got, entries+1)
	}
	return nil
}
