package web

import (
	"archive/zip"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"

	"netdisk/api"
	"netdisk/dav"
	"netdisk/errs"
	"netdisk/meta"
)

// MaxZipEntries bounds a folder download: the listing is read before the
// first byte goes out (so a refusal is still a clean error answer).
const MaxZipEntries = 100000

// ServeZip streams folder ?path=P as a zip archive: GET /web/zip. Files are
// stored, not deflated (most of a drive is already compressed, and the
// stream then runs at disk speed); sizes past 4 GiB use zip64. Nothing is
// buffered: each file is copied from its chunks into the response.
//
// Once the first byte is sent the status cannot change: a failure mid-stream
// aborts the connection, so the client sees a broken download rather than a
// truncated archive that looks whole.
func (h *Handler) ServeZip(w http.ResponseWriter, r *http.Request, u meta.User) {
	p := r.URL.Query().Get("path")
	if p == "" {
		p = "/"
	}
	root, err := h.d.Stat(r.Context(), u.ID, p)
	if err != nil {
		h.writeErr(w, err)
		return
	}
	if !root.IsDir {
		WriteError(w, errs.Errorf("web.zip", errs.NotDir, "not a folder: %s", p))
		return
	}
	nodes, err := h.d.Tree(r.Context(), u.ID, root.Path, MaxZipEntries)
	if err != nil {
		h.writeErr(w, err)
		return
	}
	if len(nodes) > MaxZipEntries {
		WriteError(w, errs.Errorf("web.zip", errs.TooLarge, "folder has more than %d entries: download it in parts", MaxZipEntries))
		return
	}
	name := path.Base(root.Path)
	if root.Path == "/" {
		name = u.Name
	}
	if err := h.firstReadable(r.Context(), u, nodes); err != nil {
		h.writeErr(w, err) // before the status: 503 while the store is away
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(name+".zip"))
	w.Header().Set("Cache-Control", "no-store")
	dav.ProtectHeaders(w.Header())
	if err := h.writeZip(r.Context(), w, u, root, nodes, name); err != nil {
		// A failure of ours carries a kind; a write to a client that left
		// does not.
		if errs.Is(err, errs.Canceled) || !errs.Classified(err) || r.Context().Err() != nil {
			h.log.Warn("zip download aborted", "user", u.Name, "path", root.Path, "err", err)
			panic(http.ErrAbortHandler)
		}
		h.log.Error("zip download cut after its status", "user", u.Name, "path", root.Path, "err", err)
		errs.AbortResponse(w, err)
	}
}

// firstReadable opens the first chunk of the first file with content, so a
// chunk store that is away fails the download before its status is sent.
func (h *Handler) firstReadable(ctx context.Context, u meta.User, nodes []meta.Node) error {
	for _, n := range nodes {
		if !n.IsFile() || n.Size == 0 {
			continue
		}
		f, err := h.d.Open(ctx, u.ID, n.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Ready()
	}
	return nil
}

func (h *Handler) writeZip(ctx context.Context, w io.Writer, u meta.User, root meta.Node, nodes []meta.Node, top string) error {
	zw := zip.NewWriter(w)
	prefix := strings.TrimSuffix(root.Path, "/") + "/"
	names := newZipNames()
	top = names.top(top)
	if _, err := zw.CreateHeader(&zip.FileHeader{Name: top + "/", Modified: root.ModTime, Method: zip.Store}); err != nil {
		return err
	}
	for _, n := range nodes {
		rel := strings.TrimPrefix(n.Path, prefix)
		if rel == n.Path || rel == "" {
			continue
		}
		hdr := &zip.FileHeader{Name: names.name(top, rel), Modified: n.ModTime, Method: zip.Store}
		if n.IsDir {
			hdr.Name += "/"
			if _, err := zw.CreateHeader(hdr); err != nil {
				return err
			}
			continue
		}
		if n.IsSymlink() {
			// A link stays a link: unzip and Info-ZIP recreate it from
			// the mode, its body being the target (as zip -y stores it).
			hdr.SetMode(fs.ModeSymlink | 0o777)
			fw, err := zw.CreateHeader(hdr)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(fw, n.Target); err != nil {
				return err
			}
			continue
		}
		hdr.UncompressedSize64 = uint64(n.Size)
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		f, err := h.d.Open(ctx, u.ID, n.Path)
		if err != nil {
			return err
		}
		_, err = io.Copy(fw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeErr answers err with the API's status table (one translation for
// both edges) and its safe message.
func (h *Handler) writeErr(w http.ResponseWriter, err error) {
	if api.Status(err) >= 500 {
		h.log.Error("web", "err", err)
	}
	WriteError(w, err)
}
