package dav

// The Nextcloud clients' views of the trash and of a file's versions, as
// WebDAV collections beside the user's files:
//
//	/remote.php/dav/trashbin/USER/trash/           the trash items
//	/remote.php/dav/trashbin/USER/trash/NAME.dID   one item (GET, DELETE, MOVE to restore/)
//	/remote.php/dav/trashbin/USER/restore/         where a MOVE restores
//	/remote.php/dav/versions/USER/versions/FILEID/ a file's versions
//	/remote.php/dav/versions/USER/versions/FILEID/SECS   one version (GET, DELETE, MOVE to restore/)
//	/remote.php/dav/versions/USER/restore/         where a MOVE restores
//
// They are views over the drive's trash and versions (drive/history.go,
// drive/versions.go), not a second store: a restore here is the restore of
// the API and the page, with its free-name rule and its quota check. The
// handler's Prefix is /remote.php/dav/trashbin/USER (or versions/USER),
// USER checked by the server to be the signed-in user.
//
// Names are the clients'. A trash item is NAME.dID: the name it had, and
// our item id where Nextcloud puts the deletion time (ids are unique,
// times need not be); the clients show nc:trashbin-filename and keep the
// href. A version is named by its content's modification time in Unix
// seconds, the value of its getlastmodified: the Android app rebuilds the
// name from that property when it restores. Two versions of one file
// modified in the same second are SECS.VID, and SECS alone then names the
// newest of them.

import (
	"bufio"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// trashListBatch is how many trash items one read of a listing takes.
const trashListBatch = 500

// ServeTrashbin answers a request under /remote.php/dav/trashbin/USER for
// user u.
func (h *Handler) ServeTrashbin(w http.ResponseWriter, r *http.Request, u meta.User) {
	ProtectHeaders(w.Header())
	rest, _ := strings.CutPrefix(r.URL.Path, h.Prefix)
	rest = strings.Trim(rest, "/")
	status, err := h.trashbin(w, r, u, rest)
	h.finish(w, r, status, err)
}

func (h *Handler) trashbin(w http.ResponseWriter, r *http.Request, u meta.User, rest string) (int, error) {
	const op = "dav.Trashbin"
	ctx := r.Context()
	top, item, _ := strings.Cut(rest, "/")
	switch {
	case top == "" || top == "restore" && item == "":
		if r.Method != "PROPFIND" {
			return http.StatusMethodNotAllowed, nil
		}
		return h.collectionOnly(w, r, rest)
	case top != "trash":
		return 0, errs.Errorf(op, errs.NotFound, "no such trash folder")
	case item == "":
		switch r.Method {
		case "PROPFIND":
			return h.propfindTrash(w, r, u, nil)
		case http.MethodDelete:
			if _, err := h.D.EmptyTrash(ctx, u.ID); err != nil {
				return 0, err
			}
			return http.StatusNoContent, nil
		}
		return http.StatusMethodNotAllowed, nil
	}
	if strings.Contains(item, "/") {
		// What a folder item held comes back with it: the items are
		// restored and deleted whole.
		return 0, errs.Errorf(op, errs.NotFound, "only whole trash items can be read here")
	}
	it, err := h.trashItemNamed(r, u, item)
	if err != nil {
		return 0, err
	}
	switch r.Method {
	case "PROPFIND":
		return h.propfindTrash(w, r, u, &it)
	case http.MethodGet, http.MethodHead:
		rd, _, err := h.D.OpenTrash(ctx, u.ID, it.ID)
		if err != nil {
			return 0, err
		}
		defer rd.Close()
		hd := w.Header()
		hd.Set("Content-Type", ContentType(it.Path))
		hd.Set("Content-Disposition", Attachment(it.Path))
		hd.Set("ETag", ETag(rd.Node()))
		return 0, ServeReader(w, r, h.D, rd, "", rd.Node().ModTime, h.Log)
	case http.MethodDelete:
		if err := h.D.ExpungeTrash(ctx, u.ID, it.ID); err != nil {
			return 0, err
		}
		return http.StatusNoContent, nil
	case "MOVE":
		if err := h.restoreDestination(r, "a trash item"); err != nil {
			return 0, err
		}
		// The name in the Destination is the clients' courtesy: an item
		// comes back where it was deleted, under a free name if that is
		// taken, as every restore does.
		p, err := h.D.RestoreTrash(ctx, u.ID, it.ID)
		if err != nil {
			return 0, err
		}
		if n, err := h.D.Stat(ctx, u.ID, p); err == nil {
			setOCHeaders(w.Header(), n)
		}
		return http.StatusCreated, nil
	}
	return http.StatusMethodNotAllowed, nil
}

// restoreDestination checks that a MOVE's Destination is in restore/ of
// the same view: what moves is a trash item or a version (what), and it
// can only come back.
func (h *Handler) restoreDestination(r *http.Request, what string) error {
	const op = "dav.Restore"
	dst, err := h.destination(r)
	if errors.Is(err, errForeignHost) {
		return errs.Errorf(op, errs.Permission, "%s moves only into restore/", what)
	}
	if err != nil {
		return err
	}
	if !strings.HasPrefix(dst, "/restore/") {
		return errs.Errorf(op, errs.Permission, "%s moves only into restore/", what)
	}
	return nil
}

// trashItemName is item it's name in trash/.
func trashItemName(it meta.TrashItem) string {
	return vpath.Base(it.Path) + ".d" + strconv.FormatInt(it.ID, 10)
}

// trashItemNamed finds u's item from its name in trash/: the id after the
// last ".d", and the name before it must be the item's.
func (h *Handler) trashItemNamed(r *http.Request, u meta.User, name string) (meta.TrashItem, error) {
	notFound := errs.Errorf("dav.Trashbin", errs.NotFound, "no such item in the trash")
	i := strings.LastIndex(name, ".d")
	if i < 0 {
		return meta.TrashItem{}, notFound
	}
	id, err := strconv.ParseInt(name[i+2:], 10, 64)
	if err != nil || id <= 0 {
		return meta.TrashItem{}, notFound
	}
	it, err := h.D.TrashItem(r.Context(), u.ID, id)
	if err != nil {
		return meta.TrashItem{}, err
	}
	if trashItemName(it) != name {
		return meta.TrashItem{}, notFound
	}
	return it, nil
}

// collectionOnly answers PROPFIND of a folder that lists nothing (the
// trashbin's and versions' roots, restore/) with the folder alone.
func (h *Handler) collectionOnly(w http.ResponseWriter, r *http.Request, rest string) (int, error) {
	if _, err := readPropfind(r); err != nil {
		return 0, err
	}
	ms := newMultistatus(w)
	ms.collection(h.Prefix+"/"+rest, vpath.Base("/"+rest))
	return ms.end(), nil
}

// readPropfind checks a PROPFIND's body: these collections answer the
// properties the clients ask for and a few more, whatever the body names,
// but a body that is not a PROPFIND is refused as everywhere else.
func readPropfind(r *http.Request) (propfindReq, error) {
	body, err := readXMLBody(r)
	if err != nil {
		return propfindReq{}, err
	}
	req, err := parsePropfind(body)
	if err != nil {
		return propfindReq{}, errs.E("dav.Propfind", errs.Invalid, "", err)
	}
	return req, nil
}

// propfindTrash lists trash/ (Depth 0: the folder alone; else every item,
// newest first), or describes one item.
func (h *Handler) propfindTrash(w http.ResponseWriter, r *http.Request, u meta.User, one *meta.TrashItem) (int, error) {
	ctx := r.Context()
	depth, err := parseDepth(r, 1)
	if err != nil {
		return 0, err
	}
	if _, err := readPropfind(r); err != nil {
		return 0, err
	}
	if one != nil {
		n, err := h.D.TrashNode(ctx, u.ID, one.ID)
		if err != nil {
			return 0, err
		}
		ms := newMultistatus(w)
		ms.trashItem(h.Prefix, *one, n.ID)
		return ms.end(), nil
	}
	// The first page is read before the status goes out, so that a store
	// that cannot answer is an error status rather than a cut listing.
	var its []meta.TrashItem
	if depth != 0 {
		if its, err = h.D.TrashList(ctx, u.ID, 0, trashListBatch); err != nil {
			return 0, err
		}
	}
	ms := newMultistatus(w)
	ms.collection(h.Prefix+"/trash", "trash")
	for len(its) > 0 {
		for _, it := range its {
			n, err := h.D.TrashNode(ctx, u.ID, it.ID)
			if err != nil {
				continue // restored or expunged since the page was read
			}
			ms.trashItem(h.Prefix, it, n.ID)
		}
		if len(its) < trashListBatch {
			break
		}
		if its, err = h.D.TrashList(ctx, u.ID, its[len(its)-1].ID, trashListBatch); err != nil {
			h.Log.Error("trashbin listing cut", "user", u.Name, "err", err)
			break
		}
	}
	return ms.end(), nil
}

// ServeVersions answers a request under /remote.php/dav/versions/USER for
// user u.
func (h *Handler) ServeVersions(w http.ResponseWriter, r *http.Request, u meta.User) {
	ProtectHeaders(w.Header())
	rest, _ := strings.CutPrefix(r.URL.Path, h.Prefix)
	rest = strings.Trim(rest, "/")
	status, err := h.versions(w, r, u, rest)
	h.finish(w, r, status, err)
}

func (h *Handler) versions(w http.ResponseWriter, r *http.Request, u meta.User, rest string) (int, error) {
	const op = "dav.Versions"
	ctx := r.Context()
	parts := strings.Split(rest, "/")
	switch {
	case rest == "" || rest == "versions" || parts[0] == "restore" && len(parts) <= 2:
		// restore/ and restore/target exist only as a MOVE's destination.
		if r.Method != "PROPFIND" {
			return http.StatusMethodNotAllowed, nil
		}
		return h.collectionOnly(w, r, rest)
	case parts[0] != "versions" || len(parts) > 3:
		return 0, errs.Errorf(op, errs.NotFound, "no such versions folder")
	}
	// A file id names one of the user's own files or one shared with
	// them, never anyone else's (answered as unknown): ids are guessable.
	// Through a share, the drive decides as on every path: reading the
	// versions needs the share, restoring one a writable share.
	fileID, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || fileID <= 0 {
		return 0, errs.Errorf(op, errs.NotFound, "no such file id")
	}
	n, err := h.D.NodeByIDInView(ctx, u.ID, fileID)
	if err != nil {
		return 0, err
	}
	if n.IsDir {
		return 0, errs.Errorf(op, errs.NotFound, "a folder has no versions")
	}
	cur, vs, err := h.D.FileVersions(ctx, u.ID, n.Path)
	if err != nil {
		return 0, err
	}
	names := versionNames(vs)
	if len(parts) == 2 {
		if r.Method != "PROPFIND" {
			return http.StatusMethodNotAllowed, nil
		}
		depth, err := parseDepth(r, 1)
		if err != nil {
			return 0, err
		}
		if _, err := readPropfind(r); err != nil {
			return 0, err
		}
		ms := newMultistatus(w)
		base := h.Prefix + "/versions/" + parts[1]
		ms.collection(base, parts[1])
		if depth != 0 {
			for i, v := range vs {
				ms.version(base+"/"+names[i], cur, v)
			}
		}
		return ms.end(), nil
	}
	i := versionNamed(vs, names, parts[2])
	if i < 0 {
		return 0, errs.Errorf(op, errs.NotFound, "no such version")
	}
	v := vs[i]
	switch r.Method {
	case "PROPFIND":
		if _, err := readPropfind(r); err != nil {
			return 0, err
		}
		ms := newMultistatus(w)
		ms.version(h.Prefix+"/versions/"+parts[1]+"/"+names[i], cur, v)
		return ms.end(), nil
	case http.MethodGet, http.MethodHead:
		rd, _, err := h.D.OpenFileVersion(ctx, u.ID, cur.Path, v.ID)
		if err != nil {
			return 0, err
		}
		defer rd.Close()
		hd := w.Header()
		hd.Set("Content-Type", ContentType(cur.Path))
		hd.Set("Content-Disposition", Attachment(cur.Path))
		hd.Set("ETag", strconv.Quote(v.FileHash))
		return 0, ServeReader(w, r, h.D, rd, "", v.ModTime, h.Log)
	case http.MethodDelete:
		if err := h.D.DeleteVersion(ctx, u.ID, cur.Path, v.ID); err != nil {
			return 0, err
		}
		return http.StatusNoContent, nil
	case "MOVE":
		if err := h.restoreDestination(r, "a version"); err != nil {
			return 0, err
		}
		// The version becomes the file's content at its path now; the
		// content it replaces becomes a version.
		nn, err := h.D.RestoreVersion(ctx, u.ID, cur.Path, v.ID)
		if err != nil {
			return 0, err
		}
		setOCHeaders(w.Header(), nn)
		return http.StatusNoContent, nil
	}
	return http.StatusMethodNotAllowed, nil
}

// versionNames names vs (one file's): its modification time in Unix
// seconds, with ".VID" when another version has the same second.
func versionNames(vs []meta.Version) []string {
	count := make(map[int64]int, len(vs))
	for _, v := range vs {
		count[v.ModTime.Unix()]++
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.FormatInt(v.ModTime.Unix(), 10)
		if count[v.ModTime.Unix()] > 1 {
			out[i] += "." + strconv.FormatInt(v.ID, 10)
		}
	}
	return out
}

// versionNamed returns the index in vs (newest first) of the version name
// names: its exact name, or the seconds alone for the newest version of
// that second; -1 for none.
func versionNamed(vs []meta.Version, names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	for i, v := range vs {
		if strconv.FormatInt(v.ModTime.Unix(), 10) == name {
			return i
		}
	}
	return -1
}

// multistatus streams a 207 answer of these views. Every response carries
// the properties the clients read, whatever the request named.
type multistatus struct {
	w   *bufio.Writer
	buf []byte
}

func newMultistatus(w http.ResponseWriter) *multistatus {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusMultiStatus)
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" +
		`<d:multistatus xmlns:d="DAV:" xmlns:oc="` + nsOC + `" xmlns:nc="` + nsNC + `">`)
	return &multistatus{w: bw}
}

// end closes the answer; its status is out already (0 for finish).
func (m *multistatus) end() int {
	m.w.WriteString("</d:multistatus>\n")
	m.w.Flush()
	return 0
}

func (m *multistatus) open(href string, dir bool) []byte {
	b := append(m.buf[:0], "<d:response><d:href>"...)
	b = appendPathEscaped(b, href)
	if dir {
		b = append(b, '/')
	}
	return append(b, "</d:href><d:propstat><d:prop>"...)
}

func (m *multistatus) close(b []byte) {
	b = append(b, "</d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>\n"...)
	m.buf = b
	m.w.Write(b) // a client gone away is seen by the next write; nothing to tell
}

func appendProp(b []byte, name, value string) []byte {
	b = append(append(append(b, '<'), name...), '>')
	b = appendEscaped(b, value)
	return append(append(append(b, "</"...), name...), '>')
}

func (m *multistatus) collection(href, name string) {
	b := m.open(href, true)
	b = append(b, "<d:resourcetype><d:collection/></d:resourcetype>"...)
	b = appendProp(b, "d:displayname", name)
	m.close(b)
}

// trashItem writes item it (whose node is nodeID) in trash/.
func (m *multistatus) trashItem(prefix string, it meta.TrashItem, nodeID int64) {
	name := vpath.Base(it.Path)
	b := m.open(prefix+"/trash/"+trashItemName(it), it.IsDir)
	if it.IsDir {
		b = append(b, "<d:resourcetype><d:collection/></d:resourcetype>"...)
		b = appendProp(b, "d:getcontenttype", "httpd/unix-directory")
	} else {
		b = append(b, "<d:resourcetype/>"...)
		b = appendProp(b, "d:getcontentlength", strconv.FormatInt(it.Size, 10))
		b = appendProp(b, "d:getcontenttype", ContentType(name))
	}
	b = appendProp(b, "d:displayname", name)
	b = appendProp(b, "d:getlastmodified", it.Deleted.UTC().Format(http.TimeFormat))
	// Nextcloud's is the deletion time too: a trash item never changes.
	b = appendProp(b, "d:getetag", strconv.Quote("t"+strconv.FormatInt(it.ID, 10)))
	b = appendProp(b, "oc:fileid", strconv.FormatInt(nodeID, 10))
	b = appendProp(b, "oc:size", strconv.FormatInt(it.Size, 10))
	b = appendProp(b, "oc:permissions", "GD") // read and delete (restore is a move)
	b = appendProp(b, "nc:trashbin-filename", name)
	// Relative to the user's root, as Nextcloud gives it.
	b = appendProp(b, "nc:trashbin-original-location", strings.TrimPrefix(it.Path, "/"))
	b = appendProp(b, "nc:trashbin-deletion-time", strconv.FormatInt(it.Deleted.Unix(), 10))
	m.close(b)
}

// version writes version v of file cur.
func (m *multistatus) version(href string, cur meta.Node, v meta.Version) {
	b := m.open(href, false)
	b = append(b, "<d:resourcetype/>"...)
	b = appendProp(b, "d:getcontentlength", strconv.FormatInt(v.Size, 10))
	b = appendProp(b, "d:getcontenttype", ContentType(cur.Path))
	b = appendProp(b, "d:getlastmodified", v.ModTime.UTC().Format(http.TimeFormat))
	b = appendProp(b, "d:creationdate", v.Saved.UTC().Format(time.RFC3339))
	b = appendProp(b, "d:getetag", strconv.Quote(v.FileHash))
	b = appendProp(b, "oc:fileid", strconv.FormatInt(cur.ID, 10))
	b = appendProp(b, "oc:size", strconv.FormatInt(v.Size, 10))
	b = appendProp(b, "nc:version-label", "")
	m.close(b)
}
