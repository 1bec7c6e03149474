package drive

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"netdisk/chunker"
	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/meta"
)

// Uploads in parts: the sync clients' chunked upload (dav/ncupload.go) on
// the upload sessions of sessions.go. The client cuts the file as it likes
// (any size, any order, a part sent again replaces it) and names the target
// only at the end, so:
//
//	open:     OpenPartsSession — a session whose declared size (the
//	          client's announced total, 0 when unknown) the ledger reserves
//	          as for any session (errs.Quota when it cannot fit)
//	part:     PutSessionPart — the part cut into pieces of at most the
//	          chunk size, each stored durably as a content-addressed blob
//	          (pinned), then recorded in one transaction as the part's
//	          pieces (meta.PutSessionPart), which keep them alive
//	assemble: AssembleSession — the parts in order re-cut at the chunk size
//	          into the file's own chunks (a piece already on a chunk
//	          boundary is one, stored once), the checksums verified, the
//	          chunks recorded in the session, then CommitSession: one
//	          commit, versions and trash as for any write
//	abort, expiry: DropSession / the upload janitor, as for any session
//
// Everything lives in the metadata store and the chunk store, so a part one
// node received is listed, continued and assembled by any other, and a part
// stops existing only with its session. A piece that straddles the file's
// chunk boundaries is kept as it came until the assembly, when its
// neighbours are all there; the re-cut chunks deduplicate as any others.

// PartsSessionPath is the path a parts session carries until its assembly
// names the target: not a drive path (those begin with "/"), so no other
// upload resumes it.
func PartsSessionPath(name string) string { return "parts:" + name }

// OpenPartsSession opens uid's parts session id (named name by the client)
// reserving size bytes (0 when the client did not say).
func (d *Drive) OpenPartsSession(ctx context.Context, uid int64, id, name string, size int64, now time.Time) error {
	const op = "drive.OpenPartsSession"
	if size < 0 {
		return errs.Errorf(op, errs.Invalid, "negative size")
	}
	if err := d.CheckFileSize(op, "", size); err != nil {
		return err
	}
	// No session is ever resumed in its place: notBefore is the end of time.
	used, err := d.OpenSession(ctx, meta.Session{ID: id, UserID: uid, Path: PartsSessionPath(name), Size: size, ChunkSize: d.chunkSize},
		time.Unix(0, math.MaxInt64), now)
	if err == nil && used != id {
		err = errs.Errorf(op, errs.Exists, "upload %s exists", name)
	}
	return err
}

// PutSessionPart reads body (at most limit bytes when limit >= 0: more is
// errs.Quota) and records it as part name of uid's open session id; it
// returns the part's size.
func (d *Drive) PutSessionPart(ctx context.Context, uid int64, id, name string, body io.Reader, limit int64, now time.Time) (int64, error) {
	const op = "drive.PutSessionPart"
	if _, err := d.meta.Session(ctx, uid, id); err != nil {
		return 0, err
	}
	if limit >= 0 {
		body = io.LimitReader(body, limit+1)
	}
	var pieces []meta.Chunk
	var keys []dedup.Key
	defer func() {
		for _, k := range keys {
			d.pins.Unpin(context.WithoutCancel(ctx), k)
		}
	}()
	var n int64
	for {
		b := make([]byte, d.chunkSize)
		got, err := io.ReadFull(body, b)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, errs.E(op, errs.Invalid, "", err)
		}
		if got == 0 && len(pieces) > 0 {
			break
		}
		n += int64(got)
		if limit >= 0 && n > limit {
			return 0, errs.OverQuota(op, "", limit, n, "")
		}
		// Hashed here, in the request's goroutine: a part is one client
		// request, and its pieces are stored one after the other anyway.
		sum := chunker.HashChunk(b[:got])
		key := dedup.Key(sum.SHA256)
		d.pins.Pin(ctx, key)
		keys = append(keys, key)
		if err := d.StoreBlob(ctx, key, b[:got]); err != nil {
			return 0, err
		}
		pieces = append(pieces, meta.Chunk{SHA256: sum.SHA256, MD5: sum.MD5, Size: sum.Size})
		if got < len(b) {
			break
		}
	}
	return n, d.meta.PutSessionPart(ctx, id, name, pieces, now)
}

// SessionPart is a part of a parts session as the client sent it.
type SessionPart struct {
	Name    string
	Size    int64
	Touched time.Time
	pieces  []meta.Chunk
}

// SessionParts returns the parts uid's open session id holds, in assembly
// order: by number when every name is one (the clients' byte offsets or
// counters, padded or not), else by name.
func (d *Drive) SessionParts(ctx context.Context, uid int64, id string) ([]SessionPart, error) {
	ss, err := d.meta.Session(ctx, uid, id)
	if err != nil {
		return nil, err
	}
	if ss.State != meta.SessionOpen {
		return nil, errs.E("drive.SessionParts", errs.NotFound, "", meta.ErrNoSession)
	}
	pcs, err := d.meta.SessionPieces(ctx, id)
	if err != nil {
		return nil, err
	}
	var parts []SessionPart
	numeric := true
	for _, p := range pcs {
		if len(parts) == 0 || parts[len(parts)-1].Name != p.Part {
			parts = append(parts, SessionPart{Name: p.Part})
			if _, err := strconv.ParseUint(p.Part, 10, 64); err != nil {
				numeric = false
			}
		}
		last := &parts[len(parts)-1]
		last.Size += p.Chunk.Size
		last.Touched = p.Touched
		last.pieces = append(last.pieces, p.Chunk)
	}
	slices.SortFunc(parts, func(a, b SessionPart) int {
		if numeric {
			x, _ := strconv.ParseUint(a.Name, 10, 64)
			y, _ := strconv.ParseUint(b.Name, 10, 64)
			if x != y {
				if x < y {
					return -1
				}
				return 1
			}
		}
		return strings.Compare(a.Name, b.Name)
	})
	return parts, nil
}

// AssembleOptions tune AssembleSession.
type AssembleOptions struct {
	Total             int64     // the announced size; -1 when not announced
	WantMD5, WantSHA1 string    // the content's checksums as the client claims them ("" unchecked)
	ModTime           time.Time // zero means now
}

// AssembleSession makes the parts of uid's open session id, in order, the
// file at path in one commit, and reports whether a file was there. Parts
// that do not add up to o.Total are errs.Conflict (one is missing: the
// client sends it and assembles again), checksums that do not match
// errs.Mismatch; either leaves the session as it was. A session opened
// without a size (or with a smaller one) reserves the parts' total now, in a
// session of its own that replaces it.
func (d *Drive) AssembleSession(ctx context.Context, uid int64, id, path string, o AssembleOptions, now time.Time) (meta.Node, bool, error) {
	const op = "drive.AssembleSession"
	ss, err := d.meta.Session(ctx, uid, id)
	if err != nil {
		return meta.Node{}, false, err
	}
	parts, err := d.SessionParts(ctx, uid, id)
	if err != nil {
		return meta.Node{}, false, err
	}
	var total int64
	var pieces []meta.Chunk
	for _, p := range parts {
		total += p.Size
		pieces = append(pieces, p.pieces...)
	}
	if o.Total >= 0 && o.Total != total {
		return meta.Node{}, false, errs.Errorf(op, errs.Conflict, "the parts hold %d bytes, %d announced", total, o.Total)
	}
	if err := d.CheckFileSize(op, path, total); err != nil {
		return meta.Node{}, false, err
	}
	if err := d.CheckWrite(ctx, uid, path); err != nil {
		return meta.Node{}, false, err // before the bytes are read again
	}
	_, statErr := d.Stat(ctx, uid, path)
	existed := statErr == nil

	chunks, sums, err := d.recut(ctx, pieces, total)
	defer func() {
		for _, c := range chunks {
			d.pins.Unpin(context.WithoutCancel(ctx), dedup.Key(c.SHA256))
		}
	}()
	if err != nil {
		return meta.Node{}, false, err
	}
	if o.WantMD5 != "" && o.WantMD5 != sums.md5 || o.WantSHA1 != "" && o.WantSHA1 != sums.sha1 {
		return meta.Node{}, false, errs.E(op, errs.Mismatch, path, errors.New("the content does not match the checksum the client sent"))
	}

	sid := id
	if total > ss.Size {
		// The reservation is the parts' total: a session of that size
		// takes over (errs.Quota when it cannot fit), and this one goes
		// once the file is committed.
		b := make([]byte, 16)
		rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot provide)
		sid = hex.EncodeToString(b)
		if _, err := d.OpenSession(ctx, meta.Session{ID: sid, UserID: uid, Path: path, Size: total, ChunkSize: d.chunkSize},
			time.Unix(0, math.MaxInt64), now); err != nil {
			return meta.Node{}, false, err
		}
		defer func() {
			if _, err := d.DropSession(context.WithoutCancel(ctx), id, now); err != nil {
				d.log.Warn("drive: dropping an assembled parts session", "session", id, "err", err)
			}
		}()
	} else if err := d.meta.SetSessionPath(ctx, sid, path); err != nil {
		return meta.Node{}, false, err
	}
	fh := chunker.NewFileHasher()
	for i, c := range chunks {
		if err := d.recordSessionChunk(ctx, uid, sid, int64(i), c, now); err != nil {
			if sid != id {
				d.DropSession(context.WithoutCancel(ctx), sid, now)
			}
			return meta.Node{}, false, err
		}
		fh.Add(c.MD5)
	}
	held, err := d.meta.SessionChunks(ctx, sid)
	if err != nil {
		return meta.Node{}, false, err
	}
	f := meta.NewFile{Size: total, ModTime: o.ModTime, MD5: sums.md5, SHA1: sums.sha1, FileHash: fh.Sum()}
	for _, c := range held {
		f.Chunks = append(f.Chunks, c.Chunk)
	}
	n, err := d.CommitSession(ctx, uid, path, sid, f, now)
	if err != nil && sid != id {
		d.DropSession(context.WithoutCancel(ctx), sid, now)
	}
	return n, existed, err
}

type contentSums struct{ md5, sha1 string }

// recut reads pieces, in order, and cuts their bytes at the chunk size into
// chunks stored durably and pinned (the caller unpins them): a piece that
// already is such a chunk is not stored again. It returns the chunks (with
// the record ID of those that were pieces) and the content's checksums.
func (d *Drive) recut(ctx context.Context, pieces []meta.Chunk, total int64) ([]meta.Chunk, contentSums, error) {
	const op = "drive.AssembleSession"
	known := make(map[string]meta.Chunk, len(pieces))
	for _, p := range pieces {
		known[p.SHA256] = p
	}
	r := &piecesReader{ctx: ctx, d: d, pieces: pieces}
	defer r.close()
	whole5, whole1 := md5.New(), sha1.New()
	var out []meta.Chunk
	for left := total; left > 0; {
		b := make([]byte, min(left, d.chunkSize))
		if _, err := io.ReadFull(r, b); err != nil {
			return out, contentSums{}, err
		}
		left -= int64(len(b))
		whole5.Write(b)
		whole1.Write(b)
		sum := chunker.HashChunk(b)
		key := dedup.Key(sum.SHA256)
		d.pins.Pin(ctx, key)
		c := meta.Chunk{SHA256: sum.SHA256, MD5: sum.MD5, Size: sum.Size}
		out = append(out, c)
		if p, ok := known[sum.SHA256]; ok {
			out[len(out)-1].ID = p.ID // stored as a piece: pinned, kept by the session's parts
			continue
		}
		if err := d.StoreBlob(ctx, key, b); err != nil {
			return out, contentSums{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return out, contentSums{}, errs.E(op, errs.Canceled, "", err)
	}
	return out, contentSums{md5: hex.EncodeToString(whole5.Sum(nil)), sha1: hex.EncodeToString(whole1.Sum(nil))}, nil
}

// piecesReader reads the blobs of pieces one after the other.
type piecesReader struct {
	ctx    context.Context
	d      *Drive
	pieces []meta.Chunk
	cur    io.ReadCloser
	left   int64
}

func (r *piecesReader) Read(p []byte) (int, error) {
	for r.cur == nil || r.left == 0 {
		r.close()
		if len(r.pieces) == 0 {
			return 0, io.EOF
		}
		pc := r.pieces[0]
		r.pieces = r.pieces[1:]
		if pc.Size == 0 {
			continue
		}
		f, err := r.d.blobs.Open(r.ctx, dedup.Key(pc.SHA256))
		if errors.Is(err, dedup.ErrNotFound) {
			return 0, chunkGone("drive.AssembleSession")
		}
		if err != nil {
			return 0, fmt.Errorf("read piece %s: %w", pc.SHA256, err)
		}
		r.cur, r.left = f, pc.Size
	}
	n, err := r.cur.Read(p[:min(int64(len(p)), r.left)])
	r.left -= int64(n)
	if errors.Is(err, io.EOF) && r.left > 0 {
		err = fmt.Errorf("a piece ended %d bytes early: %w", r.left, io.ErrUnexpectedEOF)
	} else if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (r *piecesReader) close() {
	if r.cur != nil {
		r.cur.Close()
		r.cur = nil
	}
}

// Session returns uid's upload session id (meta.Sessions.Session).
func (d *Drive) Session(ctx context.Context, uid int64, id string) (meta.Session, error) {
	return d.meta.Session(ctx, uid, id)
}

// PartsUploads returns the names of uid's open parts sessions, the most
// recently used first.
func (d *Drive) PartsUploads(ctx context.Context, uid int64) ([]string, error) {
	all, err := d.meta.UserSessions(ctx, uid)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ss := range all {
		if name, ok := strings.CutPrefix(ss.Path, PartsSessionPath("")); ok {
			names = append(names, name)
		}
	}
	return names, nil
}
