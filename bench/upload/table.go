package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/inproc"
	"netdisk/chunker"
	"netdisk/daemon"
)

// The paper of seed 004 measures, for four file sizes (4.1, 53, 102 and
// 511 MB), a simple upload (the whole file in one request) against its
// chunked upload with 2 MiB and 4 MiB chunks and 1 or 3 uploads at a time,
// each the mean of three runs. runTable measures the same grid against
// netdisk: "whole" is one request (the one-request API PUT
// /api/v1/file/upload under smallFileLimit, WebDAV PUT above it); "chunked"
// is what a client does: hash every chunk (MD5), init, uploadChunk with
// -parallel at a time, merge. Every run uploads new content, so nothing is
// deduplicated.

type tableCell struct {
	name      string
	chunkSize int64 // 0: whole
	parallel  int
}

func runTable(sizes string, reps int) error {
	var fileSizes []int64
	for _, s := range strings.Split(sizes, ",") {
		n, err := humanize.ParseBytes(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("-table %q: %w", s, err)
		}
		fileSizes = append(fileSizes, int64(n))
	}
	cells := []tableCell{{"whole", 0, 1}, {"2 MiB ×1", 2 << 20, 1}, {"4 MiB ×1", 4 << 20, 1},
		{"2 MiB ×3", 2 << 20, 3}, {"4 MiB ×3", 4 << 20, 3}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// One daemon per chunk size (the server's chunk size is its own).
	daemons := map[int64]*inproc.Daemon{}
	for _, cs := range []int64{2 << 20, 4 << 20} {
		d, err := inproc.Start(ctx, daemon.Options{ChunkSize: cs})
		if err != nil {
			return err
		}
		defer d.Close()
		if _, err := d.Drive.AddUser(ctx, "alice", "pw-alice", false, 0); err != nil {
			return err
		}
		daemons[cs] = d
		// Warm up (connections, SQLite's first pages): not a cell's cost.
		w := &bench{url: d.URL, size: 1 << 20, chunkSize: cs, client: http.DefaultClient}
		if err := w.chunked("alice", "/warm.bin", 1, 1); err != nil {
			return err
		}
	}
	fmt.Printf("seed 004's table: mean seconds of %d runs per cell (whole = one request; chunked = MD5 of each chunk, init, uploadChunk ×N at a time, merge)\n", reps)
	fmt.Printf("%-10s", "size")
	for _, c := range cells {
		fmt.Printf(" %10s", c.name)
	}
	fmt.Println()
	seed := uint64(100)
	for _, size := range fileSizes {
		fmt.Printf("%-10s", humanize.Bytes(uint64(size)))
		for _, c := range cells {
			cs := c.chunkSize
			if cs == 0 {
				cs = 4 << 20
			}
			d := daemons[cs]
			b := &bench{url: d.URL, size: size, chunkSize: cs,
				client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.parallel + 1}}}
			var total time.Duration
			for r := range reps {
				seed++
				p := fmt.Sprintf("/t/%d-%d.bin", size, seed)
				t0 := time.Now()
				var err error
				if c.chunkSize == 0 {
					err = b.whole("alice", p, seed)
				} else {
					err = b.chunked("alice", p, seed, c.parallel)
				}
				if err != nil {
					return fmt.Errorf("%s, %s, run %d: %w", humanize.Bytes(uint64(size)), c.name, r, err)
				}
				total += time.Since(t0)
			}
			fmt.Printf(" %10.3f", total.Seconds()/float64(reps))
		}
		fmt.Println()
	}
	return nil
}

// whole sends the file in one request: the one-request API under
// smallFileLimit (8 MiB), WebDAV PUT above it (the API's one request is
// bounded; WebDAV's is not).
func (b *bench) whole(user, path string, seed uint64) error {
	pr, pw := io.Pipe()
	go func() {
		for i := range chunker.ChunkCount(b.size, b.chunkSize) {
			if _, err := pw.Write(b.chunk(seed, i)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	target := b.url + "/dav" + path
	want := http.StatusCreated
	if b.size < 8<<20 {
		target = b.url + "/api/v1/file/upload?path=" + url.QueryEscape(path)
		want = http.StatusOK
	}
	req, err := http.NewRequest(http.MethodPut, target, pr)
	if err != nil {
		return err
	}
	req.ContentLength = b.size
	req.SetBasicAuth(user, "pw-"+user)
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("PUT %s: %s", path, resp.Status)
	}
	return nil
}

// chunked is a client's chunked upload of new content: the MD5 of every
// chunk and the file hash first (as the page and `netdisk push` do), then
// init, the chunks parallel at a time, merge.
func (b *bench) chunked(user, path string, seed uint64, parallel int) error {
	n := chunker.ChunkCount(b.size, b.chunkSize)
	md5s := make([]string, n)
	for i := range n {
		m := md5.Sum(b.chunk(seed, i))
		md5s[i] = hex.EncodeToString(m[:])
	}
	return b.apiUpload(user, path, seed, md5s, chunker.FileHash(md5s), parallel)
}
