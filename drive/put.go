package drive

import (
	"cmp"
	"context"
	"io"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// PutOptions describe a whole file sent in one request (the API's
// one-request upload).
type PutOptions struct {
	// Size is the announced length of the body (Content-Length); -1 when
	// unknown. A body of another length is refused (Invalid).
	Size int64
	// FileHash, when not "", is the content's file hash as the client
	// claims it: other content is refused (errs.Mismatch), keeping the old
	// version.
	FileHash string
	// FileSHA256, with FileHash and a Size above zero, names the content
	// exactly (chunker.FileSHA256) and allows the instant path: see PutFile.
	FileSHA256 string
	ModTime    time.Time // zero means now
	Mode       *uint32   // permission bits; nil keeps the old version's (or the default)

	// holder is the user whose holdings make the upload instant when it
	// is not the tree's owner: a share's recipient writing into it.
	holder int64
}

// PutFile writes body as a new version of p through the same streaming
// Writer as WebDAV's PUT, so it is cut into the same chunks. Missing parent
// folders are created, as a session's merge does.
//
// When uid already holds a file of o.FileHash, o.FileSHA256 and o.Size, the
// new version is committed from it and body is not read at all (instant is
// true): a caller that answers before reading lets a client that sent
// Expect: 100-continue never send the bytes. FileHash alone (MD5s, which two
// contents can share) commits nothing unread. Only files uid can read count
// (their own, and those in shares they receive: HeldContent), also when p
// lies in a share, so the answer never tells whether someone else holds the
// content.
//
// The body's read errors keep their kind (the caller marks them where they
// happen); a failure of the drive (the quota, the ledger, a full disk) has
// its own.
func (d *Drive) PutFile(ctx context.Context, uid int64, p string, o PutOptions, body io.Reader) (n meta.Node, instant bool, err error) {
	const op = "drive.PutFile"
	if p, err = clean(op, p); err != nil {
		return n, false, err
	}
	if p == "/" {
		return n, false, errs.E(op, errs.IsDir, p, nil)
	}
	ctx, wh, err := d.resolve(ctx, op, uid, p, writeAccess)
	if err != nil {
		return n, false, err
	}
	if wh.m != nil {
		// Into the owner's tree, but instant only for content the
		// recipient holds (HeldContent): naming content the owner alone
		// holds proves nothing, and the answer must not tell what the
		// owner has.
		o.holder = uid
		n, instant, err = d.PutFile(ctx, wh.uid, wh.path, o, body)
		return wh.node(n), instant, wh.err(err)
	}
	wo := WriteOptions{ExpectedSize: o.Size, WantFileHash: o.FileHash, ModTime: o.ModTime}
	if o.Mode != nil {
		wo.Mode = meta.StoredMode(*o.Mode)
	}
	try := o.FileSHA256 != "" && o.Size > 0
	// The parent usually exists: Create finds it in the look-up it makes
	// anyway, and only a missing (or file) parent costs the folders' walk.
	// The instant path needs the folders first.
	var w *Writer
	if !try {
		w, err = d.Create(ctx, uid, p, wo)
		if err != nil && !errs.Is(err, errs.NoParent) && !errs.Is(err, errs.NotDir) {
			return n, false, err
		}
	}
	if w == nil {
		if parent := vpath.Parent(p); parent != "/" {
			if err := d.MkdirAll(ctx, uid, parent); err != nil {
				return n, false, err
			}
		}
	}
	if try {
		n, ok, err := d.commitHeldContent(ctx, cmp.Or(o.holder, uid), uid, p, o.FileHash, o.FileSHA256, o.Size, o.ModTime)
		if err == nil && ok && o.Mode != nil {
			// Rare (a client sending both): the mode in a second step.
			if err = d.SetMode(ctx, uid, p, *o.Mode); err == nil {
				n.Mode = meta.StoredMode(*o.Mode)
			}
		}
		if err != nil || ok {
			return n, ok, err
		}
	}
	if w == nil {
		if w, err = d.Create(ctx, uid, p, wo); err != nil {
			return n, false, err
		}
	}
	got, err := w.ReadFrom(body)
	if err == nil && o.Size >= 0 && got != o.Size {
		err = errs.Errorf(op, errs.Invalid, "body has %d bytes, %d announced", got, o.Size)
	}
	if err != nil {
		w.Abort()
		return n, false, err
	}
	n, err = w.Commit()
	return n, false, err
}
