package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"syscall"
	"time"

	"netdisk/bench/internal/inproc"
	"netdisk/client"
	"netdisk/meta"
)

// seeds are the distinct contents the big folder's files share (the
// folder's files reuse their chunk lists, so building 100,000 files costs
// rows, not bytes): a range of sizes, the small ones kept inline, the
// larger in chunk files.
const seeds = 16

// seedSize is the size of seed i: from a few bytes to 64 KiB.
func seedSize(i int) int { return 1 + i*i*i*16 }

// seedBytes is the content of seed i.
func seedBytes(i int) []byte {
	var s [32]byte
	s[0], s[1] = byte(i), 'f'
	b := make([]byte, seedSize(i))
	rand.NewChaCha8(s).Read(b)
	return b
}

// entry is what a listing says of one node: every column a delete and a
// restore must bring back as it was.
type entry struct {
	id, size, mtime int64
	path, hash      string
	isDir           bool
	mode            uint32
}

func listing(ctx context.Context, d *inproc.Daemon, uid int64, dir string) ([]entry, error) {
	ns, err := d.Drive.Tree(ctx, uid, dir, 1<<30)
	if err != nil {
		return nil, err
	}
	out := make([]entry, len(ns))
	for i, n := range ns {
		out[i] = entry{id: n.ID, size: n.Size, mtime: n.ModTime.UnixNano(), path: n.Path, hash: n.FileHash, isDir: n.IsDir, mode: n.Mode}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// bigPath is file i of the big folder (100 subfolders).
func bigPath(i int) string { return fmt.Sprintf("/big/d%03d/file-%06d.bin", i%100, i) }

// davDo sends one WebDAV request as admin and checks its status.
func davDo(ctx context.Context, d *inproc.Daemon, method, p string, body []byte, want ...int) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.URL+"/dav"+p, r)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth("admin", inproc.AdminPass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(want, resp.StatusCode) {
		return nil, fmt.Errorf("%s %s: %s", method, p, resp.Status)
	}
	return out, nil
}

// seedFiles PUTs the seeds and returns each as a file the store can commit
// again at other paths.
func seedFiles(ctx context.Context, d *inproc.Daemon, uid int64) ([]meta.NewFile, error) {
	if _, err := davDo(ctx, d, "MKCOL", "/seed", nil, http.StatusCreated); err != nil {
		return nil, err
	}
	var fs []meta.NewFile
	for i := range seeds {
		p := fmt.Sprintf("/seed/s%02d.bin", i)
		if _, err := davDo(ctx, d, http.MethodPut, p, seedBytes(i), http.StatusCreated); err != nil {
			return nil, err
		}
		n, err := d.Drive.Stat(ctx, uid, p)
		if err != nil {
			return nil, err
		}
		cs, err := d.Meta.FileChunks(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		// The checksums go along: files without them would keep the
		// daemon's checksum pass busy beside the timed steps.
		f := meta.NewFile{Size: n.Size, FileHash: n.FileHash, ModTime: n.ModTime, MD5: n.MD5, SHA1: n.SHA1}
		for _, c := range cs {
			f.Chunks = append(f.Chunks, c.Chunk)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// build commits files at path(i), file i with seed i%seeds's content and
// its own time, batch files per write transaction, then runs also(tx, i)
// (nil: nothing) for each.
func build(ctx context.Context, d *inproc.Daemon, uid int64, fs []meta.NewFile, files int, path func(int) string, also func(*meta.Tx, int) error) error {
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	dirs := map[string]bool{"/": true}
	const batch = 20_000
	for done := 0; done < files; {
		err := d.Meta.Tx(ctx, func(tx *meta.Tx) error {
			for k := 0; k < batch && done < files; k, done = k+1, done+1 {
				p := path(done)
				for _, dir := range parents(p) {
					if !dirs[dir] {
						if _, _, err := d.Meta.MkdirTx(ctx, tx, uid, dir, t0, 0, meta.NoGrowthLimit); err != nil {
							return err
						}
						dirs[dir] = true
					}
				}
				f := fs[done%len(fs)]
				f.ModTime = t0.Add(time.Duration(done) * time.Second)
				if _, _, err := d.Meta.CommitFileTx(ctx, tx, uid, p, f, meta.NoGrowthLimit); err != nil {
					return err
				}
				if also != nil {
					if err := also(tx, done); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// parents returns p's folders below the root, outermost first.
func parents(p string) []string {
	var out []string
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// median returns the middle of ds (the mean of the two middle ones for an
// even count), with the fastest and the slowest.
func median(ds []time.Duration) (med, lo, hi time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// cpuTime is the CPU time the process (daemon and benchmark) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the folder's deletes and restores to this file")

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// runFolder deletes a folder of files files to the trash over WebDAV and
// restores it through the JSON API, rounds times, timing each, and checks
// after every restore that the folder is back at its path, its whole
// listing (ids, sizes, times, hashes, modes) as before, and that a sample
// of its files reads back with the right bytes.
func runFolder(ctx context.Context, d *inproc.Daemon, c *client.Client, uid int64, fs []meta.NewFile, files, rounds int) error {
	start := time.Now()
	if err := build(ctx, d, uid, fs, files, bigPath, nil); err != nil {
		return err
	}
	before, err := listing(ctx, d, uid, "/big")
	if err != nil {
		return err
	}
	if len(before) != files+100 {
		return fmt.Errorf("built %d nodes under /big, want %d", len(before), files+100)
	}
	fmt.Printf("\nfolder: %d files in 100 subfolders, built in %v\n", files, time.Since(start).Round(time.Millisecond))
	sums := make([][md5.Size]byte, seeds)
	for i := range seeds {
		sums[i] = md5.Sum(seedBytes(i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var dels, ress, delCPU, resCPU []time.Duration
	for r := range rounds {
		t, c0 := time.Now(), cpuTime()
		if _, err := davDo(ctx, d, http.MethodDelete, "/big", nil, http.StatusNoContent); err != nil {
			return err
		}
		dels, delCPU = append(dels, time.Since(t)), append(delCPU, cpuTime()-c0)
		if _, err := d.Drive.Stat(ctx, uid, "/big"); err == nil {
			return fmt.Errorf("round %d: /big is still there after DELETE", r)
		}
		its, err := c.Trash(ctx, 0, 1)
		if err != nil {
			return err
		}
		if len(its.Items) != 1 || its.Items[0].Path != "/big" {
			return fmt.Errorf("round %d: the trash's newest item is %+v, want /big", r, its.Items)
		}
		t, c0 = time.Now(), cpuTime()
		got, err := c.RestoreTrash(ctx, its.Items[0].ID, "")
		if err != nil {
			return err
		}
		ress, resCPU = append(ress, time.Since(t)), append(resCPU, cpuTime()-c0)
		if got.Path != "/big" {
			return fmt.Errorf("round %d: restored to %s, want /big", r, got.Path)
		}
		after, err := listing(ctx, d, uid, "/big")
		if err != nil {
			return err
		}
		if !slices.Equal(before, after) {
			return fmt.Errorf("round %d: the restored folder's listing differs (%d nodes before, %d after)", r, len(before), len(after))
		}
		for range 50 {
			i := rng.IntN(files)
			b, err := davDo(ctx, d, http.MethodGet, bigPath(i), nil, http.StatusOK)
			if err != nil {
				return err
			}
			if md5.Sum(b) != sums[i%seeds] {
				return fmt.Errorf("round %d: %s does not read back as it was written", r, bigPath(i))
			}
		}
	}
	dm, dlo, dhi := median(dels)
	rm, rlo, rhi := median(ress)
	dc, _, _ := median(delCPU)
	rc, _, _ := median(resCPU)
	fmt.Printf("delete to the trash (WebDAV DELETE /big): median %s (%s–%s), CPU %s, of %d rounds\n", ms(dm), ms(dlo), ms(dhi), ms(dc), rounds)
	fmt.Printf("restore (POST /api/v1/trash/restore):     median %s (%s–%s), CPU %s, of %d rounds\n", ms(rm), ms(rlo), ms(rhi), ms(rc), rounds)
	fmt.Printf("after each restore: all %d nodes listed as before (id, size, mtime, hash, mode), 50 random files read back bit for bit\n", len(before))
	fmt.Printf("within 1 s each: delete %v, restore %v\n", dm < time.Second, rm < time.Second)
	// The folder goes for good: the trash listing below is timed over its
	// own items alone.
	if _, err := davDo(ctx, d, http.MethodDelete, "/big", nil, http.StatusNoContent); err != nil {
		return err
	}
	_, err = c.EmptyTrash(ctx)
	return err
}

// runTrashList fills the trash with items deleted files (each its own item,
// as deleting them one by one makes) and times the first page of the
// trash through the JSON API, runs times.
func runTrashList(ctx context.Context, d *inproc.Daemon, c *client.Client, uid int64, fs []meta.NewFile, items, runs int) error {
	start := time.Now()
	path := func(i int) string { return fmt.Sprintf("/gone/f%06d.bin", i) }
	err := build(ctx, d, uid, fs, items, path, func(tx *meta.Tx, i int) error {
		_, err := d.Meta.RemoveTx(ctx, tx, uid, path(i))
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("\ntrash: %d items (files deleted one by one), filled in %v\n", items, time.Since(start).Round(time.Millisecond))
	var ts []time.Duration
	var page []int64
	for range runs {
		t := time.Now()
		l, err := c.Trash(ctx, 0, 0)
		if err != nil {
			return err
		}
		ts = append(ts, time.Since(t))
		page = page[:0]
		for _, it := range l.Items {
			page = append(page, it.ID)
		}
		if len(l.Items) == 0 || l.Items[0].Path != path(items-1) {
			return fmt.Errorf("the first page does not start with the newest item: %+v", l.Items[:min(len(l.Items), 1)])
		}
		if !slices.IsSortedFunc(page, func(a, b int64) int { return int(b - a) }) {
			return fmt.Errorf("the first page is not newest first")
		}
	}
	m, lo, hi := median(ts)
	fmt.Printf("first page (GET /api/v1/trash, %d items): median %s (%s–%s) of %d runs\n", len(page), ms(m), ms(lo), ms(hi), runs)
	fmt.Printf("within 100 ms: %v\n", m < 100*time.Millisecond)
	return nil
}
