package dav

// The ownCloud and Nextcloud properties and headers their sync clients
// (nextcloudcmd, owncloudcmd, the desktop and mobile apps) read: a stable
// file id to tell a move from a delete and a create, permissions, a
// folder's size, and the same id and ETag on the answer of a write.

import (
	"encoding/xml"
	"net/http"
	"strconv"

	"netdisk/meta"
)

// nsNC is Nextcloud's namespace.
const nsNC = "http://nextcloud.org/ns"

// InstanceID follows the node id in oc:id and OC-FileId, as Nextcloud
// appends its installation's id: the clients treat the whole as an opaque
// id and keep the numeric oc:fileid beside it.
const InstanceID = "ocnetdisk"

// isOwnCloud reports whether n is one of the ownCloud or Nextcloud
// properties computed here, only when asked for by name (not in allprop,
// as on their servers).
func isOwnCloud(n xml.Name) bool {
	switch n.Space {
	case nsOC:
		switch n.Local {
		case "fileid", "id", "permissions", "size", "data-fingerprint":
			return true
		}
	case nsNC:
		return n.Local == "has-preview"
	}
	return false
}

// OCFileID is n's oc:id: the node id, zero-padded as Nextcloud pads it, and
// InstanceID. The node id survives renames and moves, so a client that
// finds the same id at a new path moves its copy instead of downloading.
func OCFileID(n meta.Node) string {
	id := strconv.FormatInt(n.ID, 10)
	for len(id) < 8 {
		id = "0" + id
	}
	return id + InstanceID
}

// ocPermissions are the letters of oc:permissions: G read, D delete, N
// rename, V move, W write a file, C create a file and K a folder in a
// folder; R (reshare) is what every owner's item has on Nextcloud and the
// clients expect beside the others. What the user may change allows all
// of them; what they may only read (a read-only share, a read link) is G
// alone, so a sync client neither uploads into it nor deletes from it.
func ocPermissions(n meta.Node, write bool) string {
	switch {
	case !write:
		return "G"
	case n.IsDir:
		return "RGDNVCK"
	}
	return "RGDNVW"
}

// writable reports whether the user may change n, from the listing's
// answer or, for a PROPFIND that listed nothing, the drive's (asked once).
func (p *propWriter) writable(n meta.Node) bool {
	if !p.known {
		w, err := p.fs.D.WritesAt(p.ctx, p.fs.UID, n.Path)
		if err != nil {
			return false // unknown: claim no more than reading
		}
		p.writes, p.known = w, true
	}
	return p.writes.Allowed(n.Path)
}

// appendOwnCloud appends the property name of n (isOwnCloud), or reports it
// does not apply.
func (p *propWriter) appendOwnCloud(b []byte, n meta.Node, name xml.Name) ([]byte, bool) {
	open := func(b []byte) []byte {
		return append(append(append(append(append(b, '<'), name.Local...), ` xmlns="`...), name.Space...), `">`...)
	}
	close := func(b []byte) []byte { return append(append(append(b, "</"...), name.Local...), '>') }
	switch name.Local {
	case "fileid":
		return close(strconv.AppendInt(open(b), n.ID, 10)), true
	case "id":
		return close(append(open(b), OCFileID(n)...)), true
	case "permissions":
		return close(append(open(b), ocPermissions(n, p.writable(n))...)), true
	case "size":
		size := n.Size
		if n.IsDir {
			uid, path := p.fs.UID, n.Path
			if p.h.link == nil {
				// A folder inside a share (or the user's entry of one) is
				// summed in its owner's tree; the places are read once per
				// request (the lock table's mapping of the user's paths).
				ps, err := p.fs.placesOf(p.ctx)
				if err != nil {
					return b, false
				}
				pl := ps.Of(n.Path)
				uid, path = pl.UID, pl.Path
			}
			var err error
			if size, err = p.fs.D.TreeBytes(p.ctx, uid, path); err != nil {
				// Gone or unreadable since listed: the property is
				// missing rather than the listing failing.
				return b, false
			}
		}
		return close(strconv.AppendInt(open(b), size, 10)), true
	case "data-fingerprint":
		// Nextcloud's is empty until a backup is restored; the clients
		// compare it between syncs and treat a change as "the server went
		// back in time". netdisk has no such restore.
		return close(open(b)), true
	case "has-preview":
		// Thumbnails are fetched by id (/index.php/core/preview) when the
		// client wants them; saying none keeps the desktop clients from
		// asking for every file.
		return close(append(open(b), "false"...)), true
	}
	return b, false
}

// setOCHeaders sets the headers by which the clients learn a written
// node's id and ETag without listing it again. No permissions header
// (OC-Perm): the ownCloud client reads one only from the last answer of a
// TUS upload, which is not served here; after a PUT or a chunked upload's
// MOVE neither client looks for it (owncloudcmd asks oc:permissions with
// a PROPFIND instead, whatever the answer holds).
func setOCHeaders(hd http.Header, n meta.Node) {
	hd.Set("OC-FileId", OCFileID(n))
	hd.Set("OC-ETag", ETag(n))
	if n.IsDir {
		hd.Set("ETag", ETag(n))
	}
}
