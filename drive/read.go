package drive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
)

// Reader reads one version of a file chunk by chunk. It holds the chunk list
// it was opened with, so a concurrent commit of a new version does not mix
// versions under a reader (GC never removes a chunk a reader may still open:
// see GC).
type Reader struct {
	d      *Drive
	ctx    context.Context
	node   meta.Node
	chunks []meta.FileChunk
	off    int64

	cur    io.ReadSeekCloser
	curIdx int
	curPos int64 // position inside cur
}

// Open opens file p for reading. A symbolic link reads as a small file
// whose bytes are its target (what WebDAV, the API's downloads and a zip
// hand out for it: a link is never followed by the server).
func (d *Drive) Open(ctx context.Context, uid int64, p string) (*Reader, error) {
	const op = "drive.Open"
	p, err := clean(op, p)
	if err != nil {
		return nil, err
	}
	ctx, w, err := d.resolve(ctx, op, uid, p, readAccess)
	if err != nil {
		return nil, err
	}
	if w.m != nil {
		// Through a share: the owner's file, shown in the reader's terms.
		r, err := d.Open(ctx, w.uid, w.path)
		if r != nil {
			r.node = w.node(r.node)
		}
		return r, w.err(err)
	}
	// One query for the node, its chunks and a small file's bytes: a GET of
	// a small file asks the store nothing else.
	n, cs, err := d.meta.OpenFile(ctx, uid, p)
	if err != nil {
		return nil, err
	}
	if n.IsDir {
		return nil, errs.E(op, errs.IsDir, n.Path, nil)
	}
	if n.IsSymlink() {
		return &Reader{d: d, ctx: ctx, node: n, curIdx: -1}, nil
	}
	// Pin the version's chunks so GC cannot delete them while this reader may
	// still open them, even if a newer version replaces the file meanwhile.
	for _, c := range cs {
		d.pins.Pin(ctx, dedup.Key(c.SHA256))
	}
	return &Reader{d: d, ctx: ctx, node: n, chunks: cs, curIdx: -1}, nil
}

// Node is the file version being read.
func (r *Reader) Node() meta.Node { return r.node }

// ContentKey names the content being read: its SHA-256 name
// (meta.ContentSHA256, the one instant upload binds with). Two files with the same bytes have the same key
// whoever holds them; unlike the MD5 file hash, two different contents
// never do, so what is derived from the bytes (a thumbnail) may be shared
// by the key without handing one user another's bytes on an MD5 collision.
func (r *Reader) ContentKey() string { return meta.ContentSHA256(r.chunks) }

// ContentKey is the key of file n's current content (Reader.ContentKey)
// without opening it.
func (d *Drive) ContentKey(ctx context.Context, n meta.Node) (string, error) {
	if n.IsDir {
		return "", errs.E("drive.ContentKey", errs.IsDir, n.Path, nil)
	}
	cs, err := d.meta.FileChunks(ctx, n.ID)
	if err != nil {
		return "", err
	}
	return meta.ContentSHA256(cs), nil
}

// Segment is a byte range of one chunk blob.
type Segment struct {
	Key    dedup.Key
	Offset int64 // within the chunk
	Length int64
	Size   int64 // the whole chunk's; 0 when unknown

	// listed: the segment comes from a Reader, whose chunk list says where
	// the bytes are (data, the inline bytes, or nil for a blob), so
	// OpenSegment asks the metadata store nothing.
	listed bool
	data   []byte
}

// Segments maps the file range [off, off+n) to chunk ranges, so an HTTP layer
// can send each straight from the chunk file (sendfile) without copying.
// A link's bytes are in its node, not in chunks: it has no segments.
func (r *Reader) Segments(off, n int64) []Segment {
	var out []Segment
	end := min(off+n, r.node.Size)
	i := r.chunkAt(off)
	for ; i < len(r.chunks) && off < end; i++ {
		c := r.chunks[i]
		in := off - c.Offset
		l := min(c.Size-in, end-off)
		out = append(out, Segment{Key: dedup.Key(c.SHA256), Offset: in, Length: l, Size: c.Size, listed: true, data: c.Data})
		off += l
	}
	if p, ok := dedup.AsPrefetcher(r.d.blobs); ok && len(out) > 1 {
		// A remote store (S3): keep the next chunks on their way while
		// the caller sends these in order.
		keys := make([]dedup.Key, len(out))
		for i, s := range out {
			keys[i] = s.Key
		}
		p.Prefetch(keys)
	}
	return out
}

// OpenSegment opens the chunk blob of a segment. A Reader's segment opens
// where the reader's chunk list says its bytes are (inline or a blob). Of
// another, a chunk small enough to be kept inline (only a one-chunk file of
// at most InlineMax bytes is) is asked of the metadata store first: its
// bytes are there, and must not wait on a blob store that is away (an S3
// outage) to be found missing from it.
func (d *Drive) OpenSegment(ctx context.Context, s Segment) (io.ReadSeekCloser, error) {
	if s.data != nil {
		return nopCloser{bytes.NewReader(s.data)}, nil
	}
	if !s.listed && s.Size > 0 && s.Size <= InlineMax {
		b, ok, err := d.meta.ChunkData(ctx, string(s.Key))
		if err != nil {
			return nil, err
		}
		if ok {
			return nopCloser{bytes.NewReader(b)}, nil
		}
	}
	f, err := d.blobs.Open(ctx, s.Key)
	if errors.Is(err, dedup.ErrNotFound) {
		return nil, errs.E("drive.Read", errs.Other, "", fmt.Errorf("chunk %s is missing from the store (run fsck): %w", s.Key, err))
	}
	return f, err
}

func (r *Reader) chunkAt(off int64) int {
	return sort.Search(len(r.chunks), func(i int) bool { return r.chunks[i].Offset+r.chunks[i].Size > off })
}

// Ready opens the chunk at the current offset (the first one a response
// sends), so that a store that cannot serve it fails now, while an HTTP
// edge can still answer with the error's status, rather than after a 200
// in the middle of the body. The next Read, or Take, uses the open chunk.
func (r *Reader) Ready() error {
	if r.off >= r.node.Size {
		return nil
	}
	i := r.chunkAt(r.off)
	if i >= len(r.chunks) || i == r.curIdx {
		return nil
	}
	r.closeCur()
	f, err := r.openChunk(i)
	if err != nil {
		return err
	}
	r.cur, r.curIdx, r.curPos = f, i, 0
	return nil
}

// openChunk opens chunk i: from the bytes Open read with the chunk list
// when they are inline, else through OpenSegment.
func (r *Reader) openChunk(i int) (io.ReadSeekCloser, error) {
	c := r.chunks[i]
	return r.d.OpenSegment(r.ctx, Segment{Key: dedup.Key(c.SHA256), Size: c.Size, listed: true, data: c.Data})
}

// Take hands over the chunk Ready opened when it is seg's (its position is
// unspecified: seek it), or nil; the caller closes it.
func (r *Reader) Take(seg Segment) io.ReadSeekCloser {
	if r.cur == nil || r.chunks[r.curIdx].SHA256 != string(seg.Key) {
		return nil
	}
	f := r.cur
	r.cur, r.curIdx = nil, -1
	return f
}

// Read reads from the current offset.
func (r *Reader) Read(p []byte) (int, error) {
	if r.off >= r.node.Size {
		return 0, io.EOF
	}
	if r.node.IsSymlink() {
		n := copy(p, r.node.Target[r.off:])
		r.off += int64(n)
		return n, nil
	}
	i := r.chunkAt(r.off)
	if i >= len(r.chunks) {
		return 0, errs.E("drive.Read", errs.Other, r.node.Path, errors.New("chunk list shorter than file size"))
	}
	c := r.chunks[i]
	if i != r.curIdx {
		r.closeCur()
		f, err := r.openChunk(i)
		if err != nil {
			return 0, err
		}
		r.cur, r.curIdx, r.curPos = f, i, 0
	}
	in := r.off - c.Offset
	if in != r.curPos {
		if _, err := r.cur.Seek(in, io.SeekStart); err != nil {
			return 0, err
		}
		r.curPos = in
	}
	want := min(int64(len(p)), c.Size-in)
	n, err := r.cur.Read(p[:want])
	r.off += int64(n)
	r.curPos += int64(n)
	if err == io.EOF {
		if int64(n) < want && r.curPos < c.Size {
			return n, errs.E("drive.Read", errs.Other, r.node.Path, fmt.Errorf("chunk %s is truncated", c.SHA256))
		}
		err = nil
	}
	return n, err
}

// Seek sets the offset.
func (r *Reader) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = r.off + offset
	case io.SeekEnd:
		abs = r.node.Size + offset
	default:
		return 0, errs.E("drive.Seek", errs.Invalid, r.node.Path, errors.New("bad whence"))
	}
	if abs < 0 {
		return 0, errs.E("drive.Seek", errs.Invalid, r.node.Path, errors.New("negative offset"))
	}
	r.off = abs
	return abs, nil
}

func (r *Reader) closeCur() {
	if r.cur != nil {
		r.cur.Close()
		r.cur, r.curIdx = nil, -1
	}
}

// Close releases the open chunk and the pins.
func (r *Reader) Close() error {
	r.closeCur()
	for _, c := range r.chunks {
		r.d.pins.Unpin(r.ctx, dedup.Key(c.SHA256))
	}
	r.chunks = nil
	return nil
}
