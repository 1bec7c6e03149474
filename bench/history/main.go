// Command history measures what file versions cost in chunk storage, against
// a daemon in this process (real SQLite, real chunk directory, loopback
// HTTP):
//
//	go run ./bench/history                 # a 1 GiB file, 10 saves
//	go run ./bench/history -size 64MiB     # a quick run
//
// A file of -size bytes is PUT over WebDAV, then saved -saves times, each
// save the previous content with one more 4 MiB chunk changed (a different
// chunk each time), every save a whole PUT as a plain WebDAV client sends
// it. Each save keeps the replaced content as a version. It reports the
// distinct chunk bytes the store holds after GC (what the file and its
// versions take on disk), against a full copy per version, checks that
// every version is kept, that each save cost at most its changed chunk and
// that the oldest version reads back bit for bit.
//
// Then the trash (trash.go): a folder of -files files (100,000) is deleted
// over WebDAV and restored through the JSON API -rounds times, each step
// timed (medians reported) and the whole folder checked after each
// restore; and the first page of a trash of -trash items (100,000) is
// listed -runs times. -size 0, -files 0 or -trash 0 skips that part:
//
//	go run ./bench/history -size 0             # the trash figures alone
package main

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"github.com/dustin/go-humanize"

	"netdisk/bench/internal/benchflag"
	"netdisk/bench/internal/inproc"
	"netdisk/client"
	"netdisk/daemon"
)

const chunkSize = 4 << 20

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/history:", err)
		os.Exit(1)
	}
}

// content is a file of size bytes whose chunk i holds the bytes of
// generation gen[i] (0 when absent): changing one chunk is a new generation
// for it.
type content struct {
	size int64
	gen  map[int64]int
}

// reader streams the content, one chunk at a time, from a seeded generator:
// no file of -size bytes is held in memory or on disk.
func (c content) reader() io.Reader {
	var i int64
	n := (c.size + chunkSize - 1) / chunkSize
	buf := make([]byte, chunkSize)
	var pending []byte
	return readerFunc(func(p []byte) (int, error) {
		if len(pending) == 0 {
			if i == n {
				return 0, io.EOF
			}
			l := min(chunkSize, c.size-i*chunkSize)
			var seed [32]byte
			binary.LittleEndian.PutUint64(seed[:], uint64(i))
			binary.LittleEndian.PutUint64(seed[8:], uint64(c.gen[i]))
			rng := rand.NewChaCha8(seed)
			rng.Read(buf[:l])
			pending = buf[:l]
			i++
		}
		k := copy(p, pending)
		pending = pending[k:]
		return k, nil
	})
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func run() error {
	sizeFlag := benchflag.Bytes("size", 1<<30, "file size")
	saves := flag.Int("saves", 10, "saves of the file, each changing one more 4 MiB chunk")
	files := flag.Int("files", 100_000, "files in the folder deleted and restored (0: skip)")
	rounds := flag.Int("rounds", 5, "deletes and restores of the folder")
	trash := flag.Int("trash", 100_000, "items in the trash listed (0: skip)")
	runs := flag.Int("runs", 21, "listings of the trash's first page")
	flag.Parse()
	size := int64(*sizeFlag)
	nchunks := (size + chunkSize - 1) / chunkSize
	if size > 0 && int64(*saves) > nchunks {
		return fmt.Errorf("-size %s has %d chunks, fewer than -saves %d", humanize.IBytes(uint64(size)), nchunks, *saves)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The versions loop would thin saves seconds apart (one per minute
	// after the first minute): held off, every save's version is measured.
	d, err := inproc.Start(ctx, daemon.Options{ChunkSize: chunkSize, VersionsInterval: 1000 * time.Hour})
	if err != nil {
		return err
	}
	defer d.Close()
	if size > 0 {
		if err := runVersions(ctx, d, size, *saves); err != nil {
			return err
		}
	}
	if *files == 0 && *trash == 0 {
		return nil
	}
	u, err := d.Drive.User(ctx, "admin")
	if err != nil {
		return err
	}
	c := client.New(d.URL, "admin", inproc.AdminPass)
	fs, err := seedFiles(ctx, d, u.ID)
	if err != nil {
		return err
	}
	if *files > 0 {
		if err := runFolder(ctx, d, c, u.ID, fs, *files, *rounds); err != nil {
			return err
		}
	}
	if *trash > 0 {
		return runTrashList(ctx, d, c, u.ID, fs, *trash, *runs)
	}
	return nil
}

// runVersions saves a file of size bytes saves times and measures what its
// versions cost in chunk storage.
func runVersions(ctx context.Context, d *inproc.Daemon, size int64, saves int) error {
	nchunks := (size + chunkSize - 1) / chunkSize
	put := func(c content) (time.Duration, error) {
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, d.URL+"/dav/big.bin", c.reader())
		if err != nil {
			return 0, err
		}
		req.ContentLength = c.size
		req.SetBasicAuth("admin", inproc.AdminPass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
			return 0, fmt.Errorf("PUT: %s", resp.Status)
		}
		return time.Since(start), nil
	}
	cur := content{size: size, gen: map[int64]int{}}
	first := cur
	took, err := put(cur)
	if err != nil {
		return err
	}
	fmt.Printf("file: %s in %d chunks of 4 MiB, first PUT %v\n", humanize.IBytes(uint64(size)), nchunks, took.Round(time.Millisecond))
	var total time.Duration
	for s := 1; s <= saves; s++ {
		next := content{size: size, gen: map[int64]int{}}
		for k, v := range cur.gen {
			next.gen[k] = v
		}
		// A different chunk each save, spread over the file.
		next.gen[(int64(s)*nchunks/int64(saves+1))%nchunks] = s
		took, err := put(next)
		if err != nil {
			return err
		}
		total += took
		cur = next
	}
	fmt.Printf("%d saves, one more chunk changed each: %v per save (whole PUTs)\n", saves, (total / time.Duration(saves)).Round(time.Millisecond))
	if _, err := d.Drive.GC(ctx); err != nil {
		return err
	}
	st, err := d.Drive.Stats(ctx)
	if err != nil {
		return err
	}
	u, err := d.Drive.User(ctx, "admin")
	if err != nil {
		return err
	}
	_, vs, err := d.Drive.FileVersions(ctx, u.ID, "/big.bin")
	if err != nil {
		return err
	}
	if len(vs) != saves {
		return fmt.Errorf("%d versions after %d saves", len(vs), saves)
	}
	// The oldest version is the first content, bit for bit.
	r, _, err := d.Drive.OpenFileVersion(ctx, u.ID, "/big.bin", vs[len(vs)-1].ID)
	if err != nil {
		return err
	}
	hv, hf := md5.New(), md5.New()
	_, err = io.Copy(hv, r)
	r.Close()
	if err != nil {
		return err
	}
	io.Copy(hf, first.reader())
	if string(hv.Sum(nil)) != string(hf.Sum(nil)) {
		return fmt.Errorf("the oldest version does not read back as the first content")
	}
	full := size * int64(saves+1)
	fmt.Printf("chunk storage after GC: %s in %d chunks (%d bytes) for the file and %d versions\n",
		humanize.IBytes(uint64(st.PhysicalBytes)), st.Chunks, st.PhysicalBytes, len(vs))
	fmt.Printf("a full copy per version: %s; ratio %.3f of one copy\n", humanize.IBytes(uint64(full)), float64(st.PhysicalBytes)/float64(size))
	fmt.Println("the oldest version reads back as the first content")
	// Each save may cost its one changed chunk, nothing more.
	if limit := size + int64(saves)*chunkSize; st.PhysicalBytes > limit {
		return fmt.Errorf("chunk storage %d bytes exceeds the file plus one chunk per save (%d)", st.PhysicalBytes, limit)
	}
	fmt.Printf("within 1.1 × the file: %v\n", st.PhysicalBytes <= size+size/10)
	return nil
}
