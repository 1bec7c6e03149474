// Command upload benchmarks the chunked upload API against WebDAV PUT on an
// in-process daemon (real SQLite, real chunk directory, loopback HTTP):
//
//	go run ./bench/upload                 # 1 GiB, 3 parallel chunk uploads
//	go run ./bench/upload -size 64MiB     # a quick run
//	go run ./bench/upload -table 4.1MB,53MB,102MB,511MB   # seed 004's table
//
// It reports: a new file through init/uploadChunk/merge with -parallel chunk
// uploads; WebDAV PUT of a new file of the same size; a second user
// re-uploading the first file (instant upload: bytes sent and time); and
// SQLite write transactions per uploaded chunk.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/apitype"
	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/inproc"
	"netdisk/chunker"
	"netdisk/daemon"
	"netdisk/meta"
	"netdisk/upload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/upload:", err)
		os.Exit(1)
	}
}

type bench struct {
	url       string
	size      int64
	chunkSize int64
	sent      atomic.Int64 // request body bytes
	client    *http.Client
}

// content is a deterministic file: chunk i comes from a PRNG seeded by (seed, i),
// so no run holds the whole file in memory.
func (b *bench) chunk(seed uint64, i int64) []byte {
	n := chunker.ChunkLen(b.size, b.chunkSize, i)
	out := make([]byte, n)
	r := rand.NewChaCha8(seedOf(seed, uint64(i)))
	r.Read(out)
	return out
}

func seedOf(a, b uint64) [32]byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], a)
	binary.LittleEndian.PutUint64(s[8:], b)
	return s
}

func run() error {
	sizeFlag := benchflag.Bytes("size", 1<<30, "file size")
	parallel := flag.Int("parallel", 3, "parallel chunk uploads (seed 004: 3)")
	csFlag := benchflag.Bytes("chunk-size", 4<<20, "server chunk size")
	table := flag.String("table", "", "seed 004's table instead: these file sizes (e.g. 4.1MB,53MB,102MB,511MB), whole vs chunked")
	reps := flag.Int("reps", 3, "runs per cell of -table (the paper: 3)")
	flag.Parse()
	if *table != "" {
		return runTable(*table, *reps)
	}
	size, cs := *sizeFlag, *csFlag
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Shared: the instant re-upload by a second user measures the proof
	// path, which private mode keeps for content held by enough users.
	d, err := inproc.Start(ctx, daemon.Options{ChunkSize: int64(cs), Instant: upload.Instant{Mode: upload.InstantShared}})
	if err != nil {
		return err
	}
	defer d.Close()
	for _, u := range []string{"alice", "bob", "carol"} {
		if _, err := d.Drive.AddUser(ctx, u, "pw-"+u, false, 0); err != nil {
			return err
		}
	}
	b := &bench{url: d.URL, size: int64(size), chunkSize: int64(cs),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *parallel + 1}}}
	total := chunker.ChunkCount(b.size, b.chunkSize)
	fmt.Printf("file %s, chunk %s (%d chunks), %d parallel chunk uploads\n",
		humanize.IBytes(size), humanize.IBytes(cs), total, *parallel)

	// Hash first, as a client does (not timed as upload).
	md5s, shas := make([]string, total), make([]string, total)
	for i := range total {
		s := chunker.HashChunk(b.chunk(1, i))
		md5s[i], shas[i] = s.MD5, s.SHA256
	}
	fh, fsha := chunker.FileHash(md5s), chunker.FileSHA256(shas)

	tx0, sent0, t0 := meta.WriteTxCount(), b.sent.Load(), time.Now()
	if err := b.apiUpload("alice", "/big.bin", 1, md5s, fh, *parallel); err != nil {
		return err
	}
	apiDur, apiTx, apiSent := time.Since(t0), meta.WriteTxCount()-tx0, b.sent.Load()-sent0
	report("API upload (new file)", apiDur, apiSent, b.size)
	fmt.Printf("  SQLite write transactions: %d for %d chunks = %.2f per chunk (init + merge included)\n",
		apiTx, total, float64(apiTx)/float64(max(total, 1)))

	sent0, t0 = b.sent.Load(), time.Now()
	if err := b.davPut("carol", "/dav.bin"); err != nil {
		return err
	}
	report("WebDAV PUT (new file)", time.Since(t0), b.sent.Load()-sent0, b.size)

	tx0, sent0, t0 = meta.WriteTxCount(), b.sent.Load(), time.Now()
	if err := b.instant("bob", "/copy.bin", fh, fsha); err != nil {
		return err
	}
	fmt.Printf("%-28s %10v  %s sent  (%d SQLite write transactions)\n", "instant re-upload (bob)",
		time.Since(t0).Round(time.Microsecond), humanize.IBytes(uint64(b.sent.Load()-sent0)), meta.WriteTxCount()-tx0)
	return nil
}

func report(what string, d time.Duration, sent, size int64) {
	fmt.Printf("%-28s %10v  %s sent  %.1f MiB/s\n", what, d.Round(time.Millisecond), humanize.IBytes(uint64(sent)),
		float64(size)/(1<<20)/d.Seconds())
}

func (b *bench) do(user, method, path string, body []byte, out any) error {
	req, err := http.NewRequest(method, b.url+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, "pw-"+user)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json") // the API's POSTs are JSON (a form is refused)
	}
	b.sent.Add(int64(len(body)))
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s %s", method, path, resp.Status, rb)
	}
	if out != nil {
		return json.Unmarshal(rb, out)
	}
	return nil
}

func jsonBody(v any) []byte { b, _ := json.Marshal(v); return b }

func (b *bench) apiUpload(user, path string, seed uint64, md5s []string, fh string, parallel int) error {
	var in apitype.Session
	if err := b.do(user, "POST", "/api/v1/file/init", jsonBody(apitype.InitRequest{Path: &path, Size: &b.size, FileHash: fh}), &in); err != nil {
		return err
	}
	next := make(chan int64)
	errc := make(chan error, parallel)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				q := fmt.Sprintf("/api/v1/file/uploadChunk?uploadId=%s&index=%d&hash=%s", in.UploadID, i, md5s[i])
				if err := b.do(user, "PUT", q, b.chunk(seed, i), nil); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for i := range in.TotalChunks {
		select {
		case next <- i:
		case err := <-errc:
			close(next)
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	return b.do(user, "POST", "/api/v1/file/merge", jsonBody(apitype.MergeRequest{UploadID: in.UploadID, FileHash: fh}), nil)
}

// davPut streams a new file (other content, same size) through WebDAV PUT.
func (b *bench) davPut(user, path string) error {
	pr, pw := io.Pipe()
	go func() {
		for i := range chunker.ChunkCount(b.size, b.chunkSize) {
			if _, err := pw.Write(b.chunk(2, i)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest("PUT", b.url+"/dav"+path, pr)
	if err != nil {
		return err
	}
	req.ContentLength = b.size
	req.SetBasicAuth(user, "pw-"+user)
	b.sent.Add(b.size)
	resp, err := b.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("PUT: %s", resp.Status)
	}
	return nil
}

// instant re-uploads the first file as another user: patchHash on the file
// hash and its SHA-256 name, a proof over the challenged ranges, no chunk
// bytes.
func (b *bench) instant(user, path, fh, fsha string) error {
	var in apitype.Session
	if err := b.do(user, "POST", "/api/v1/file/init", jsonBody(apitype.InitRequest{Path: &path, Size: &b.size, FileHash: fh}), &in); err != nil {
		return err
	}
	var pa apitype.PatchHashResult
	if err := b.do(user, "POST", "/api/v1/file/patchHash", jsonBody(apitype.PatchHashRequest{UploadID: in.UploadID, FileHash: fh, FileSHA256: fsha}), &pa); err != nil {
		return err
	}
	if !pa.Exists || pa.Challenge == nil {
		return fmt.Errorf("instant upload: no challenge (%+v)", pa)
	}
	h := sha256.New()
	h.Write([]byte(pa.Challenge.Nonce))
	for _, r := range pa.Challenge.Ranges {
		i := r[0] / b.chunkSize
		c := b.chunk(1, i)
		off := r[0] - i*b.chunkSize
		for n := r[1]; n > 0; {
			k := min(n, int64(len(c))-off)
			h.Write(c[off : off+k])
			n -= k
			i, off = i+1, 0
			if n > 0 {
				c = b.chunk(1, i)
			}
		}
	}
	var pr apitype.ProveResult
	if err := b.do(user, "POST", "/api/v1/file/prove", jsonBody(apitype.ProveRequest{UploadID: in.UploadID, Nonce: pa.Challenge.Nonce, Proof: hex.EncodeToString(h.Sum(nil))}), &pr); err != nil {
		return err
	}
	if !pr.OK || !pr.Completed {
		return fmt.Errorf("instant upload: proof refused")
	}
	return nil
}
