package drive

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"sync"
	"time"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/vpath"
)

// Writer streams a new version of a file into the drive. Bytes are cut at the
// chunk size; each full chunk is hashed (MD5 + SHA-256) and stored by a small
// pool of workers while the caller keeps writing, so hashing, storing and
// receiving overlap and memory stays at a few chunks whatever the file size.
// Nothing is visible until Commit; Abort (or a failed Commit) leaves the old
// version untouched.
type Writer struct {
	d      *Drive
	ctx    context.Context
	cancel context.CancelFunc
	uid    int64
	path   string
	view   where // maps what Commit returns into the asker's view (a share's)
	mtime  time.Time
	mode   uint32

	buf      []byte // the chunk being filled; nil until bytes arrive
	next     int64  // index of the chunk in buf
	size     int64
	expected int64         // announced body size, -1 when unknown
	existed  bool          // p was a file when the write began
	entry    int64         // the new entry's charge (0 when p existed)
	sem      chan struct{} // chunks in flight (hashing or storing), all uploads': bounds memory (Drive.chunkSlots)
	hashSem  chan struct{} // chunks being hashed: bounds CPU to the drive's workers
	wg       sync.WaitGroup

	hold *quota.Hold // the bytes reserved for this write

	wantMD5, wantSHA1 string // claimed content checksums (WriteOptions)
	wantFileHash      string

	// The whole content's MD5 and SHA-1 (what WebDAV clients compare), fed
	// chunk by chunk in order as take hands chunks out: no second read. md5
	// is nil once a file of one chunk took the chunk's MD5 as its own.
	md5, sha1 hash.Hash

	mu     sync.Mutex
	sums   []chunker.Sum
	pinned []dedup.Key
	err    error
	done   bool
}

// bufPool holds chunk-sized buffers (pointers, so Put does not allocate).
// Only buffers of exactly the drive's chunk size go back: short ones made for
// small bodies are left to the GC.
var bufPool sync.Pool

func (d *Drive) getBuf() []byte {
	if b, ok := bufPool.Get().(*[]byte); ok && int64(cap(*b)) == d.chunkSize {
		return (*b)[:0]
	}
	return make([]byte, 0, d.chunkSize)
}

func (d *Drive) putBuf(b []byte) {
	if int64(cap(b)) == d.chunkSize {
		b = b[:0]
		bufPool.Put(&b)
	}
}

// newBuf returns the buffer for the next chunk. When the rest of the body is
// announced shorter than a chunk, the buffer is just that big plus one byte
// (so a reader's EOF arrives without growing it): a 4 KiB PUT must not
// allocate and zero a 4 MiB buffer. A body longer than announced grows it
// (room), so chunk boundaries never depend on the announcement.
func (w *Writer) newBuf() []byte {
	if w.expected >= 0 {
		if rest := w.expected - w.size; rest >= 0 && rest+1 < w.d.chunkSize {
			return make([]byte, 0, rest+1)
		}
	}
	return w.d.getBuf()
}

// room makes sure buf has space for at least one more byte of the current
// chunk.
func (w *Writer) room() {
	if w.buf == nil {
		w.buf = w.newBuf()
	}
	if len(w.buf) == cap(w.buf) && int64(len(w.buf)) < w.d.chunkSize {
		w.buf = append(w.d.getBuf(), w.buf...)
	}
}

// WriteOptions tune Create.
type WriteOptions struct {
	// ExpectedSize, when known (Content-Length), lets Create refuse an upload
	// that cannot fit the quota before any byte is sent. -1 when unknown.
	ExpectedSize int64
	ModTime      time.Time // zero means now
	Mode         uint32    // 0 keeps the old mode (or the default)
	// WantMD5 / WantSHA1, when not "", are the content's checksums as the
	// client claims them (lowercase hex, ownCloud's OC-Checksum): Commit
	// refuses a body that does not match (errs.Mismatch), keeping the old version.
	WantMD5, WantSHA1 string
	// WantFileHash, when not "", is the content's file hash (DESIGN.md's
	// content identity) as the client claims it: Commit refuses other
	// content (errs.Mismatch), keeping the old version.
	WantFileHash string
}

// Create starts writing a new version of p. The parent must exist and p must
// not be a directory.
func (d *Drive) Create(ctx context.Context, uid int64, p string, o WriteOptions) (*Writer, error) {
	const op = "drive.Create"
	p, err := clean(op, p)
	if err != nil {
		return nil, err
	}
	ctx, w, err := d.resolve(ctx, op, uid, p, writeAccess)
	if err != nil {
		return nil, err
	}
	if w.m != nil {
		wr, err := d.Create(ctx, w.uid, w.path, o)
		if wr != nil {
			wr.view = w
		}
		return wr, w.err(err)
	}
	if p == "/" {
		return nil, errs.E(op, errs.IsDir, p, nil)
	}
	old, existed, parent, hasParent, err := d.statWithParent(ctx, uid, p)
	if err != nil {
		return nil, err
	}
	if existed && old.IsDir {
		return nil, errs.E(op, errs.IsDir, p, nil)
	}
	if !hasParent {
		return nil, errs.E(op, errs.NoParent, p, nil)
	}
	if !parent.IsDir {
		return nil, errs.E(op, errs.NotDir, p, nil)
	}
	if err := d.checkLocks(ctx, uid, writeTarget(p, existed)); err != nil {
		return nil, err // early, before any byte is read; Commit checks again
	}
	if err := d.CheckFileSize(op, p, o.ExpectedSize); err != nil {
		return nil, err
	}
	if err := d.room(op); err != nil {
		return nil, err // before any byte is read
	}
	// The declared size is reserved whole before any byte is read (the new
	// chunks sit beside the old version until the commit); a body of unknown
	// length reserves as it arrives (reserveMore).
	var entry int64
	if !existed {
		entry = meta.EntryCharge(vpath.Base(p)) // a new file's entry is charged too
	}
	hold := d.quota.NewHold(uid)
	if err := hold.Grow(ctx, max(o.ExpectedSize, 0)+entry); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	return &Writer{d: d, ctx: wctx, cancel: cancel, uid: uid, path: p, mtime: o.ModTime, mode: o.Mode,
		expected: max(o.ExpectedSize, -1), existed: existed, entry: entry,
		sem: d.chunkSlots, hashSem: d.hashSem, hold: hold, md5: md5.New(), sha1: sha1.New(),
		wantMD5: o.WantMD5, wantSHA1: o.WantSHA1, wantFileHash: o.WantFileHash}, nil
}

// statWithParent looks p and its parent up, in one query when the store can.
func (d *Drive) statWithParent(ctx context.Context, uid int64, p string) (n meta.Node, found bool, parent meta.Node, parentFound bool, err error) {
	if s, ok := d.meta.(interface {
		StatWithParent(ctx context.Context, uid int64, path string) (meta.Node, bool, meta.Node, bool, error)
	}); ok {
		return s.StatWithParent(ctx, uid, p)
	}
	n, err = d.meta.Stat(ctx, uid, p)
	if found = err == nil; err != nil && !errs.Is(err, errs.NotFound) {
		return n, false, parent, false, err
	}
	parent, err = d.meta.Stat(ctx, uid, parentOf(p))
	if errs.Is(err, errs.NotFound) {
		return n, found, parent, false, nil
	}
	return n, found, parent, err == nil, err
}

// Existed reports whether the path was a file when the write began (a PUT
// answers 204 rather than 201).
func (w *Writer) Existed() bool { return w.existed }

// Path is the cleaned path being written.
func (w *Writer) Path() string { return w.path }

// Size is the number of bytes written so far.
func (w *Writer) Size() int64 { return w.size }

// Write appends p to the file.
func (w *Writer) Write(p []byte) (int, error) {
	if err := w.failed(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		w.room()
		k := min(cap(w.buf)-len(w.buf), len(p))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		n += k
		w.size += int64(k)
		if err := w.reserve(); err != nil {
			return n, err
		}
		if len(w.buf) == int(w.d.chunkSize) {
			if err := w.dispatch(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// take removes the current buffer as the next chunk and gives it its slot.
// It hashes what must see the chunks in file order, in the caller's
// goroutine: the chunk's MD5 with the whole file's in one interleaved pass
// (chunker.WriteMD5Pair), and the file's SHA-1; the workers add each chunk's
// SHA-256. last says no chunk follows: a file of one chunk has the chunk's
// MD5 as its own, computed once.
func (w *Writer) take(last bool) ([]byte, int64, string) {
	b, idx := w.buf, w.next
	var sum [md5.Size]byte
	if idx == 0 && last {
		sum = md5.Sum(b)
		w.md5 = nil // the file's MD5 is the chunk's
	} else {
		h := md5.New()
		chunker.WriteMD5Pair(h, w.md5, b)
		h.Sum(sum[:0])
	}
	w.sha1.Write(b)
	w.buf = nil // the next chunk's buffer is made when its bytes arrive
	w.next++
	w.mu.Lock()
	w.sums = append(w.sums, chunker.Sum{})
	w.mu.Unlock()
	return b, idx, hex.EncodeToString(sum[:])
}

// dispatch hands the current buffer to a worker; it blocks while all workers
// are busy, which is what keeps memory flat on a fast sender.
func (w *Writer) dispatch() error {
	b, idx, m := w.take(false)
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		w.d.putBuf(b)
		w.fail(w.ctx.Err())
		return w.failed()
	}
	w.wg.Add(1)
	go func() {
		defer func() { <-w.sem; w.wg.Done() }()
		w.store(b, idx, m)
	}()
	return nil
}

// store hashes chunk idx (whose MD5 take computed), stores it durably and
// records its sum.
func (w *Writer) store(b []byte, idx int64, md5hex string) {
	// Hashing is CPU-bound and shares the drive-wide limit; storing waits on
	// fsync, so more chunks may be storing than hashing at once.
	sum, key := w.hashPin(b, md5hex)
	err := w.d.StoreBlob(w.ctx, key, b)
	w.d.putBuf(b)
	if err != nil {
		w.fail(err)
		return
	}
	w.mu.Lock()
	w.sums[idx] = sum
	w.mu.Unlock()
}

// keepInline hashes the file's only chunk, idx 0, and records its sum like
// store, but leaves the bytes to the commit (meta.Chunk.Data). The key is
// pinned as for a blob: GC must not delete an existing record of the same
// content between the hash and the commit.
func (w *Writer) keepInline(b []byte, idx int64, md5hex string) []byte {
	sum, _ := w.hashPin(b, md5hex)
	w.mu.Lock()
	w.sums[idx] = sum
	w.mu.Unlock()
	return b
}

// hashPin computes b's SHA-256 under the drive-wide hashing limit and pins
// its key until the writer ends, so GC cannot delete a record of the same
// content before the commit refers to it.
func (w *Writer) hashPin(b []byte, md5hex string) (chunker.Sum, dedup.Key) {
	w.hashSem <- struct{}{}
	s := sha256.Sum256(b)
	<-w.hashSem
	sum := chunker.Sum{MD5: md5hex, SHA256: hex.EncodeToString(s[:]), Size: int64(len(b))}
	key := dedup.Key(sum.SHA256)
	w.d.pins.Pin(w.ctx, key)
	w.mu.Lock()
	w.pinned = append(w.pinned, key)
	w.mu.Unlock()
	return sum, key
}

func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		// With a kind (Other unless the cause says more), so the edges
		// tell a failure of the drive from a body that could not be read.
		w.err = errs.E("drive.Write", errs.Other, w.path, err)
	}
	w.mu.Unlock()
	w.cancel()
}

func (w *Writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done && w.err == nil {
		return errs.E("drive.Write", errs.Invalid, w.path, errors.New("writer already closed"))
	}
	return w.err
}

func (w *Writer) finish() {
	w.wg.Wait()
	w.mu.Lock()
	w.done = true
	pinned := w.pinned
	w.pinned = nil
	w.mu.Unlock()
	for _, k := range pinned {
		w.d.pins.Unpin(w.ctx, k)
	}
	w.cancel()
	w.hold.Release(context.WithoutCancel(w.ctx)) // no-op once committed
}

// reserve makes sure the file stays within the maximum size and the hold
// covers every byte received before a chunk of them is stored; a refusal
// fails the write.
func (w *Writer) reserve() error {
	if err := w.d.CheckFileSize("drive.Write", w.path, w.size); err != nil {
		w.fail(err) // a body of unknown length is bounded as it streams
		return w.failed()
	}
	if w.size <= w.hold.Reserved() {
		return nil
	}
	if err := w.reserveMore(); err != nil {
		w.fail(err)
		return w.failed()
	}
	return nil
}

// Commit stores the last chunk and makes the new version visible atomically.
func (w *Writer) Commit() (meta.Node, error) {
	n, err := w.commit()
	return w.view.node(n), w.view.err(err)
}

func (w *Writer) commit() (meta.Node, error) {
	if err := w.failed(); err != nil {
		w.finish()
		return meta.Node{}, err
	}
	var inline []byte
	if len(w.buf) > 0 {
		// The last chunk is stored here, in the caller's goroutine: Commit
		// waits for it anyway, and for a small file (one short chunk) a
		// worker goroutine and its semaphores are pure overhead.
		if w.next == 0 && len(w.buf) <= InlineMax {
			// The whole file is one small chunk: its bytes go into the
			// commit's transaction (inline.go), no blob is written.
			inline = w.keepInline(w.take(true))
			defer w.d.putBuf(inline)
		} else {
			w.store(w.take(true))
		}
	} else if w.buf != nil {
		w.d.putBuf(w.buf)
	}
	w.buf = nil
	w.wg.Wait()
	defer w.finish() // unpin only after the commit references the chunks
	if err := w.failed(); err != nil {
		return meta.Node{}, err
	}
	f := meta.NewFile{Size: w.size, ModTime: w.mtime, Mode: w.mode, Replacing: w.existed,
		SHA1: hex.EncodeToString(w.sha1.Sum(nil))}
	if w.md5 != nil {
		f.MD5 = hex.EncodeToString(w.md5.Sum(nil))
	} else {
		f.MD5 = w.sums[0].MD5 // one chunk: take computed it once
	}
	if w.wantMD5 != "" && w.wantMD5 != f.MD5 || w.wantSHA1 != "" && w.wantSHA1 != f.SHA1 {
		return meta.Node{}, errs.E("drive.Commit", errs.Mismatch, w.path, errors.New("the content does not match the checksum the client sent"))
	}
	if f.ModTime.IsZero() {
		f.ModTime = w.d.now()
	}
	fh := chunker.NewFileHasher()
	for _, s := range w.sums {
		fh.Add(s.MD5)
		f.Chunks = append(f.Chunks, meta.Chunk{SHA256: s.SHA256, MD5: s.MD5, Size: s.Size})
	}
	if inline != nil {
		f.Chunks[0].Data = inline
	}
	f.FileHash = fh.Sum()
	if w.wantFileHash != "" && w.wantFileHash != f.FileHash {
		return meta.Node{}, errs.E("drive.Commit", errs.Mismatch, w.path, errors.New("the content does not match the file hash the client sent"))
	}
	// The commit must not be cut short by the request's context once every
	// byte is stored: a client that hangs up after sending still gets its file.
	ctx := context.WithoutCancel(w.ctx)
	if err := w.d.checkLocks(ctx, w.uid, writeTarget(w.path, w.existed)); err != nil {
		return meta.Node{}, err // locked while the body arrived
	}
	if err := w.d.room("drive.Commit"); err != nil {
		return meta.Node{}, err // the disk filled while the body arrived
	}
	// The body may have used the entry's reservation: the hold covers both.
	if extra := w.size + w.entry - w.hold.Reserved(); extra > 0 {
		if err := w.hold.Grow(ctx, extra); err != nil {
			return meta.Node{}, err
		}
	}
	var n meta.Node
	err := w.d.holdCommit(ctx, sharedCommit, w.hold, func(tx *meta.Tx) (delta int64, err error) {
		n, delta, err = w.d.meta.CommitFileTx(ctx, tx, w.uid, w.path, f, w.hold.Reserved())
		return delta, err
	})
	return n, w.d.noteFull(err)
}

// Abort discards what was written; the old version stays.
func (w *Writer) Abort() {
	w.fail(context.Canceled)
	w.finish()
	if w.buf != nil {
		w.d.putBuf(w.buf)
		w.buf = nil
	}
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

// ReadFrom copies r into the file, reading straight into the chunk buffer so
// a large upload is not copied twice in memory.
func (w *Writer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if err := w.failed(); err != nil {
			return total, err
		}
		w.room()
		n, err := r.Read(w.buf[len(w.buf):cap(w.buf)])
		w.buf = w.buf[:len(w.buf)+n]
		w.size += int64(n)
		total += int64(n)
		if rerr := w.reserve(); rerr != nil {
			return total, rerr
		}
		if int64(len(w.buf)) == w.d.chunkSize {
			if derr := w.dispatch(); derr != nil {
				return total, derr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
