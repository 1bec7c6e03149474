// Command push benchmarks the client side of uploads (netdisk push) against a
// daemon in this process (real SQLite, real chunk directory, loopback HTTP):
//
//	go run ./bench/push                              # 1 GiB file, 10,000 small files
//	go run ./bench/push -size 64MiB -files 500       # a quick run
//
// Big file, each with its own content so no run deduplicates against another:
//   - hash only: reading + chunk MD5s, no network (the lower bound of hashing);
//   - pipeline: client.Push — seed 000, hashing and uploading overlap;
//   - hash-then-upload: every chunk hashed first, then uploaded with the same
//     concurrency (upload time reported apart: pipeline ≈ max, this = sum);
//   - curl -T to WebDAV: one streaming PUT, no hashing on the client.
//
// Then -files small files pushed as a directory, -concurrency at once: each is
// one request (the one-request upload with its file hash; the server lacks
// the content, so it reads the body), against `rclone copy` of the same
// folder to `rclone serve webdav` with as many transfers, interleaved rounds.
package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/sync/errgroup"

	"netdisk/bench/internal/benchdata"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/inproc"
	"netdisk/chunker"
	"netdisk/client"
	"netdisk/daemon"
	"netdisk/testutil"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/push:", err)
		os.Exit(1)
	}
}

func run() error {
	sizeFlag := benchflag.Bytes("size", 1<<30, "big file size")
	csFlag := benchflag.Bytes("chunk-size", 4<<20, "server chunk size")
	files := flag.Int("files", 10000, "number of small files")
	smallFlag := benchflag.Bytes("small-size", 4<<10, "size of each small file")
	conc := flag.Int("concurrency", 3, "chunk uploads (and small files) at once")
	smallRounds := flag.Int("small-rounds", 1, "rounds of the small-file comparison (netdisk push, then rclone copy; rclone's WebDAV pacer makes each of its rounds minutes long)")
	bwFlag := benchflag.Bytes("bandwidth", 0, "limit upload bandwidth (e.g. 100MiB), like a real link; 0 = loopback speed")
	flag.Parse()
	size, cs, small, bw := *sizeFlag, *csFlag, *smallFlag, *bwFlag
	dir, err := os.MkdirTemp("", "netdisk-bench-push-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := inproc.Start(ctx, daemon.Options{ChunkSize: int64(cs)})
	if err != nil {
		return err
	}
	defer d.Close()
	url := d.URL
	c := client.New(url, "admin", inproc.AdminPass)
	link := "loopback, unlimited"
	if bw > 0 {
		c.HTTP = &http.Client{Transport: &throttled{next: http.DefaultTransport, pace: &pacer{rate: float64(bw)}}}
		link = "loopback limited to " + humanize.IBytes(bw) + "/s"
	}
	fmt.Printf("big file %s, chunk %s, concurrency %d; %d small files of %s; %d CPUs; %s\n",
		humanize.IBytes(size), humanize.IBytes(cs), *conc, *files, humanize.IBytes(small), runtime.NumCPU(), link)

	mk := func(name string, seed uint64) (string, error) {
		p := filepath.Join(dir, name)
		return p, benchdata.WriteRandom(p, seedKey(seed), int64(size))
	}

	// Hash only (also warms the page cache for the pipeline's file's twin).
	pA, err := mk("a.bin", 1)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := hashFile(pA, int64(cs)); err != nil {
		return err
	}
	hashOnly := time.Since(t0)
	report("hash only (chunk MD5s)", hashOnly, int64(size))

	// Pipeline.
	t0 = time.Now()
	res, err := c.Push(ctx, pA, "/pipeline.bin", client.PushOptions{Concurrency: *conc, SmallFileLimit: -1})
	if err != nil {
		return err
	}
	pipe := time.Since(t0)
	report("pipeline push (seed 000)", pipe, res.BytesSent)
	os.Remove(pA)

	// Hash everything, then upload.
	pB, err := mk("b.bin", 2)
	if err != nil {
		return err
	}
	t0 = time.Now()
	hashes, err := hashFile(pB, int64(cs))
	if err != nil {
		return err
	}
	hashT := time.Since(t0)
	t1 := time.Now()
	if err := uploadHashed(ctx, c, pB, "/sequential.bin", int64(size), int64(cs), hashes, *conc); err != nil {
		return err
	}
	upT := time.Since(t1)
	report("hash-then-upload", hashT+upT, int64(size))
	fmt.Printf("  of which hashing %v, uploading %v; pipeline vs max(hash, upload) = %v vs %v\n",
		hashT.Round(time.Millisecond), upT.Round(time.Millisecond), pipe.Round(time.Millisecond), max(hashT, upT).Round(time.Millisecond))
	os.Remove(pB)

	// curl -T to WebDAV.
	if curl, err := exec.LookPath("curl"); err == nil {
		pC, err := mk("c.bin", 3)
		if err != nil {
			return err
		}
		t0 = time.Now()
		args := []string{"-sS", "-f", "-u", "admin:" + inproc.AdminPass, "-T", pC, url + "/dav/curl.bin"}
		if bw > 0 {
			args = append(args, "--limit-rate", fmt.Sprint(bw))
		}
		out, err := exec.CommandContext(ctx, curl, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("curl: %v: %s", err, out)
		}
		report("curl -T to WebDAV", time.Since(t0), int64(size))
		os.Remove(pC)
	} else {
		fmt.Println("curl -T to WebDAV: curl not installed, skipped")
	}

	if *files <= 0 {
		return nil
	}
	// Small files, new content every round (a second push of the same
	// content would be instant: the user holds it).
	sd := filepath.Join(dir, "small")
	fill := func(round int) error {
		for i := range *files {
			sub := filepath.Join(sd, fmt.Sprintf("d%02d", i%100))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
			if err := benchdata.WriteRandom(filepath.Join(sub, fmt.Sprintf("f%05d", i)), seedKey(uint64(1000+i+round<<24)), int64(small)); err != nil {
				return err
			}
		}
		return nil
	}
	// netdisk push and rclone copy to rclone serve webdav, interleaved rounds,
	// the same files and the same number of transfers at once.
	rc, err := startRclone(ctx, dir)
	if err != nil {
		return err
	}
	defer rc.Stop()
	var ndRate, rcRate []float64
	for r := range *smallRounds {
		if err := fill(r); err != nil {
			return err
		}
		t0 = time.Now()
		sres, err := c.Push(ctx, sd+"/", fmt.Sprintf("/small-%d", r), client.PushOptions{Concurrency: *conc})
		if err != nil {
			return err
		}
		if sres.Files != *files || sres.Instant != 0 {
			return fmt.Errorf("push of small files: %+v, want %d files sent", sres, *files)
		}
		el := time.Since(t0)
		ndRate = append(ndRate, float64(sres.Files)/el.Seconds())
		t0 = time.Now()
		if err := rc.copy(ctx, sd, fmt.Sprintf("small-%d", r), *conc); err != nil {
			return err
		}
		rcRate = append(rcRate, float64(*files)/time.Since(t0).Seconds())
		fmt.Printf("%-28s round %d: netdisk push %.0f files/s, rclone copy %.0f files/s\n", "small files", r+1, ndRate[r], rcRate[r])
	}
	nd, rcm := benchdata.Median(ndRate), benchdata.Median(rcRate)
	fmt.Printf("%-28s netdisk push %.0f files/s, rclone copy → rclone serve webdav %.0f files/s: %.2f× (median of %d, %d at once)\n",
		"small files", nd, rcm, nd/rcm, *smallRounds, *conc)
	return nil
}

// rcloneServer is `rclone serve webdav` on a temp folder, the reference
// server rclone copy uploads to.
type rcloneServer struct {
	*testutil.RcloneWebDAV
	url string
}

func startRclone(ctx context.Context, work string) (*rcloneServer, error) {
	root := filepath.Join(work, "rclone-root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	rc, err := testutil.LaunchRcloneWebDAV(ctx, root, "", "", nil)
	if err != nil {
		return nil, err
	}
	return &rcloneServer{RcloneWebDAV: rc, url: rc.URL + "/"}, nil
}

func (s *rcloneServer) copy(ctx context.Context, src, dst string, transfers int) error {
	out, err := exec.CommandContext(ctx, "rclone", "copy", src, ":webdav:"+dst, "--webdav-url", s.url,
		"--transfers", fmt.Sprint(transfers), "--config", "/dev/null").CombinedOutput()
	if err != nil {
		return fmt.Errorf("rclone copy: %v: %s", err, out)
	}
	return nil
}

func report(what string, d time.Duration, bytes int64) {
	fmt.Printf("%-28s %10v  %s/s\n", what, d.Round(time.Millisecond), humanize.IBytes(uint64(float64(bytes)/d.Seconds())))
}

// seedKey is the ChaCha8 key of a file seeded by seed (its low 32 bits).
func seedKey(seed uint64) [32]byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	key[2], key[3] = byte(seed>>16), byte(seed>>24)
	return key
}

func hashFile(p string, cs int64) ([]string, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hs []string
	buf := make([]byte, cs)
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			m := md5.Sum(buf[:n])
			hs = append(hs, hex.EncodeToString(m[:]))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return hs, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// uploadHashed is the naive client: every chunk hashed beforehand, then sent
// with the same concurrency, then merged.
func uploadHashed(ctx context.Context, c *client.Client, local, remote string, size, cs int64, hashes []string, conc int) error {
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := c.Init(ctx, remote, size, chunker.FileHash(hashes))
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i, h := range hashes {
		g.Go(func() error {
			buf := make([]byte, chunker.ChunkLen(size, cs, int64(i)))
			if _, err := f.ReadAt(buf, int64(i)*cs); err != nil && err != io.EOF {
				return err
			}
			return c.UploadChunk(gctx, in.UploadID, i, h, buf)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	_, err = c.Merge(ctx, in.UploadID, chunker.FileHash(hashes), "")
	return err
}

// throttled paces request bodies through one shared pacer, so concurrent
// uploads share the link as they would a real one.
type throttled struct {
	next http.RoundTripper
	pace *pacer
}

func (t *throttled) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r2 := r.Clone(r.Context())
		r2.Body = &pacedBody{ReadCloser: r.Body, pace: t.pace}
		return t.next.RoundTrip(r2)
	}
	return t.next.RoundTrip(r)
}

type pacer struct {
	mu   sync.Mutex
	rate float64 // bytes per second
	free time.Time
}

// wait blocks until n more bytes fit on the link.
func (p *pacer) wait(n int) {
	p.mu.Lock()
	now := time.Now()
	// A little credit absorbs the oversleeping of time.Sleep, so the
	// average rate holds without bursts longer than 20ms.
	if floor := now.Add(-20 * time.Millisecond); p.free.Before(floor) {
		p.free = floor
	}
	p.free = p.free.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	until := p.free
	p.mu.Unlock()
	time.Sleep(time.Until(until))
}

type pacedBody struct {
	io.ReadCloser
	pace *pacer
}

func (b *pacedBody) Read(buf []byte) (int, error) {
	if len(buf) > 64<<10 {
		buf = buf[:64<<10]
	}
	n, err := b.ReadCloser.Read(buf)
	b.pace.wait(n)
	return n, err
}
