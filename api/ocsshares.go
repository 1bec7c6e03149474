package api

// The OCS share API of the Nextcloud and ownCloud clients' share dialogs
// (/ocs/v{1,2}.php/apps/files_sharing/api/v1/shares), in the shapes of
// Nextcloud's ShareAPIController, over the drive's public links
// (drive/links.go) and shares between users (drive/shares.go): one
// implementation, what the API, the CLI and the page change is what these
// calls change.
//
// Share ids. Links and user shares are two tables with ids of their own;
// the OCS id of a share is 2×its id, that of a link 2×its id+1, so one
// number names either and stays an integer (the Android app parses it as
// one). Every id resolves through the signed-in user's own shares, links
// and the shares made with them: anyone else's is the "wrong share ID"
// answer of an unknown one.
//
// What netdisk does not keep: a link's token exists only in the answer
// that creates it (the store keeps its hash), so later listings give the
// link without token and url; a password is never shown, not even hashed
// (share_with is "***" when the link has one). Shares between users are
// read-only or read-write, without expiry or resharing.

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"netdisk/dav"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Nextcloud's share types and permission bits.
const (
	ocsShareUser  = 0
	ocsShareGroup = 1
	ocsShareLink  = 3

	ocsPermRead   = 1
	ocsPermUpdate = 2
	ocsPermCreate = 4
	ocsPermDelete = 8
	ocsPermShare  = 16
	ocsPermRW     = ocsPermRead | ocsPermUpdate | ocsPermCreate | ocsPermDelete
)

// ocsShare is one share as the clients parse it.
type ocsShare struct {
	ID                   string  `json:"id" xml:"id"`
	ShareType            int     `json:"share_type" xml:"share_type"`
	UIDOwner             string  `json:"uid_owner" xml:"uid_owner"`
	DisplaynameOwner     string  `json:"displayname_owner" xml:"displayname_owner"`
	Permissions          int     `json:"permissions" xml:"permissions"`
	CanEdit              bool    `json:"can_edit" xml:"can_edit"`
	CanDelete            bool    `json:"can_delete" xml:"can_delete"`
	STime                int64   `json:"stime" xml:"stime"`
	Parent               *string `json:"parent" xml:"parent"`
	Expiration           *string `json:"expiration" xml:"expiration"`
	Token                *string `json:"token" xml:"token"`
	UIDFileOwner         string  `json:"uid_file_owner" xml:"uid_file_owner"`
	DisplaynameFileOwner string  `json:"displayname_file_owner" xml:"displayname_file_owner"`
	Path                 string  `json:"path" xml:"path"`
	ItemType             string  `json:"item_type" xml:"item_type"`
	Mimetype             string  `json:"mimetype" xml:"mimetype"`
	StorageID            string  `json:"storage_id" xml:"storage_id"`
	Storage              int     `json:"storage" xml:"storage"`
	ItemSource           int64   `json:"item_source" xml:"item_source"`
	FileSource           int64   `json:"file_source" xml:"file_source"`
	FileParent           int64   `json:"file_parent" xml:"file_parent"`
	FileTarget           string  `json:"file_target" xml:"file_target"`
	ShareWith            *string `json:"share_with" xml:"share_with"`
	ShareWithDisplayname *string `json:"share_with_displayname" xml:"share_with_displayname"`
	URL                  string  `json:"url,omitempty" xml:"url,omitempty"`
	MailSend             int     `json:"mail_send" xml:"mail_send"`
	HideDownload         int     `json:"hide_download" xml:"hide_download"`
	Label                string  `json:"label" xml:"label"`
	Note                 string  `json:"note" xml:"note"`
}

// ocsShareList is a list of shares: an array in JSON, <element>s in XML.
type ocsShareList []ocsShare

// MarshalXML writes the list as the OCS API does.
func (l ocsShareList) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, s := range l {
		if err := e.EncodeElement(s, xml.StartElement{Name: xml.Name{Local: "element"}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

func strp(s string) *string { return &s }

// OCS ids (see the top of the file).
func ocsUserShareID(id int64) string { return strconv.FormatInt(2*id, 10) }
func ocsLinkID(id int64) string      { return strconv.FormatInt(2*id+1, 10) }

// parseOCSID returns the share or the link id an OCS id names.
func parseOCSID(s string) (id int64, link bool, err error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false, errNoShare
	}
	return n / 2, n%2 == 1, nil
}

// errNoShare is Nextcloud's one answer for an id that names nothing the
// user may see.
var errNoShare = errs.E("api.ocsShares", errs.NotFound, "", errors.New("wrong share ID, share doesn't exist"))

// ocsExpiry is an expiry as the clients show it: the last day the link
// works, at midnight.
func ocsExpiry(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return strp(t.UTC().Add(-time.Nanosecond).Format("2006-01-02") + " 00:00:00")
}

// parseOCSExpiry reads an expireDate: a day (YYYY-MM-DD, the clients'
// form; a time after it is ignored, as Nextcloud does). The link works
// through that day (UTC).
func parseOCSExpiry(s string) (time.Time, error) {
	if len(s) >= 10 {
		if d, err := time.Parse("2006-01-02", s[:10]); err == nil {
			return d.Add(24 * time.Hour), nil
		}
	}
	return time.Time{}, errs.Errorf("api.ocsShares", errs.Invalid, "invalid date %q, date format must be YYYY-MM-DD", s)
}

// linkPermOCS maps a link's permission to Nextcloud's bits and back.
func linkPermOCS(p meta.LinkPerm) int {
	switch p {
	case meta.LinkUpload:
		return ocsPermCreate
	case meta.LinkReadWrite:
		return ocsPermRW
	}
	return ocsPermRead
}

func ocsLinkPerm(bits int) (meta.LinkPerm, error) {
	switch bits &^ ocsPermShare {
	case ocsPermRead:
		return meta.LinkRead, nil
	case ocsPermCreate:
		return meta.LinkUpload, nil
	case ocsPermRW, ocsPermRead | ocsPermUpdate | ocsPermCreate: // the second: older clients' "public upload"
		return meta.LinkReadWrite, nil
	}
	return 0, errs.Errorf("api.ocsShares", errs.Invalid,
		"can't give a public link permissions %d: 1 (read), 4 (upload only) or 15 (read and write)", bits)
}

// sharePermOCS is a user share's bits: read, or everything but resharing
// (a file has no create or delete in it, as on Nextcloud).
func sharePermOCS(write, dir bool) int {
	switch {
	case !write:
		return ocsPermRead
	case dir:
		return ocsPermRW
	}
	return ocsPermRead | ocsPermUpdate
}

// ocsShareWrite reads a user share's bits: read alone, or read and write.
func ocsShareWrite(bits int, dir bool) (bool, error) {
	b := bits &^ ocsPermShare
	switch {
	case b == ocsPermRead:
		return false, nil
	case b == ocsPermRW, !dir && b == ocsPermRead|ocsPermUpdate:
		return true, nil
	}
	return false, errs.Errorf("api.ocsShares", errs.Invalid,
		"netdisk shares are read-only (1) or read-write (15, or 31), not %d", bits)
}

// ocsParams reads a call's parameters: the query, and a form or JSON body.
func ocsParams(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "application/json" {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil && err != io.EOF {
			return nil, errs.E("api.ocsShares", errs.Invalid, "", err)
		}
		v := r.URL.Query()
		for k, x := range m {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			case float64:
				v.Set(k, strconv.FormatInt(int64(x), 10))
			case bool:
				v.Set(k, strconv.FormatBool(x))
			}
		}
		return v, nil
	}
	if err := r.ParseForm(); err != nil {
		return nil, errs.E("api.ocsShares", errs.Invalid, "", err)
	}
	return r.Form, nil
}

// baseURL is the address the client reached us at, for a link's url.
func baseURL(r *http.Request) string {
	scheme := "http"
	// X-Forwarded-Proto reaches here only from a trusted proxy.
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// ocsNodeFields fills what a share says of its node n (in the asker's
// terms: p is where they see it).
func (a *API) ocsNodeFields(r *http.Request, uid int64, s *ocsShare, n meta.Node, p string) {
	s.Path, s.ItemSource, s.FileSource = p, n.ID, n.ID
	s.ItemType, s.Mimetype = "file", dav.ContentType(p)
	if n.IsDir {
		s.ItemType, s.Mimetype = "folder", "httpd/unix-directory"
	}
	s.FileTarget = "/" + vpath.Base(p)
	s.Storage = 1
	if parent, err := a.D.Stat(r.Context(), uid, vpath.Parent(p)); err == nil {
		s.FileParent = parent.ID
	}
}

func (a *API) ocsLink(r *http.Request, u meta.User, l meta.Link, n meta.Node) ocsShare {
	s := ocsShare{ID: ocsLinkID(l.ID), ShareType: ocsShareLink, UIDOwner: u.Name, DisplaynameOwner: u.Name,
		UIDFileOwner: u.Name, DisplaynameFileOwner: u.Name, Permissions: linkPermOCS(l.Perm), CanEdit: true, CanDelete: true,
		STime: l.Created.Unix(), Expiration: ocsExpiry(l.Expires), StorageID: "home::" + u.Name}
	if l.PassHash != "" {
		s.ShareWith, s.ShareWithDisplayname = strp("***"), strp("***")
	}
	a.ocsNodeFields(r, u.ID, &s, n, l.Path)
	return s
}

func (a *API) ocsOwnShare(r *http.Request, u meta.User, sh meta.Share, n meta.Node) ocsShare {
	s := ocsShare{ID: ocsUserShareID(sh.ID), ShareType: ocsShareUser, UIDOwner: u.Name, DisplaynameOwner: u.Name,
		UIDFileOwner: u.Name, DisplaynameFileOwner: u.Name, Permissions: sharePermOCS(sh.Write, n.IsDir), CanEdit: true, CanDelete: true,
		STime: sh.Created.Unix(), StorageID: "home::" + u.Name, ShareWith: strp(sh.ToName), ShareWithDisplayname: strp(sh.ToName)}
	if sh.ToGroup != 0 {
		s.ShareType = ocsShareGroup
	}
	a.ocsNodeFields(r, u.ID, &s, n, sh.Path)
	return s
}

// ocsIncoming is a share made with u, in u's terms: their entry's path,
// never the owner's.
func (a *API) ocsIncoming(r *http.Request, u meta.User, m meta.Mount) ocsShare {
	s := ocsShare{ID: ocsUserShareID(m.ShareID), ShareType: ocsShareUser, UIDOwner: m.OwnerName, DisplaynameOwner: m.OwnerName,
		UIDFileOwner: m.OwnerName, DisplaynameFileOwner: m.OwnerName, Permissions: sharePermOCS(m.Write, m.TargetDir),
		CanDelete: true, StorageID: "shared::" + m.OwnerName, ShareWith: strp(u.Name), ShareWithDisplayname: strp(u.Name)}
	if m.Group {
		s.ShareType = ocsShareGroup
		// The group's name, from the owner's record of the share (nothing
		// else of it leaves here).
		if ss, err := a.D.Shares(r.Context(), m.OwnerID); err == nil {
			for _, sh := range ss {
				if sh.ID == m.ShareID {
					s.ShareWith, s.ShareWithDisplayname = strp(sh.ToName), strp(sh.ToName)
					s.STime = sh.Created.Unix()
				}
			}
		}
	}
	n := meta.Node{ID: m.Target, IsDir: m.TargetDir}
	a.ocsNodeFields(r, u.ID, &s, n, m.Path)
	return s
}

// ocsShares gathers u's shares: made by u (links and user shares, whose
// node passes keep), or made with u (incoming).
func (a *API) ocsShares(r *http.Request, u meta.User, incoming bool, keep func(p string, n meta.Node) bool) (ocsShareList, error) {
	ctx := r.Context()
	out := ocsShareList{}
	if incoming {
		ms, err := a.D.SharedWithMe(ctx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if keep(m.Path, meta.Node{ID: m.Target, IsDir: m.TargetDir}) {
				out = append(out, a.ocsIncoming(r, u, m))
			}
		}
		return out, nil
	}
	node := func(p string) (meta.Node, bool) {
		if p == "" {
			return meta.Node{}, false // in the trash: nothing to share now
		}
		n, err := a.D.Stat(ctx, u.ID, p)
		return n, err == nil && keep(p, n)
	}
	ss, err := a.D.Shares(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, sh := range ss {
		if n, ok := node(sh.Path); ok {
			out = append(out, a.ocsOwnShare(r, u, sh, n))
		}
	}
	ls, err := a.D.Links(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		if n, ok := node(l.Path); ok {
			out = append(out, a.ocsLink(r, u, l, n))
		}
	}
	return out, nil
}

// OCSListShares answers GET …/shares: the user's shares and links, or
// (shared_with_me=true) the shares made with them; path= keeps those of
// one file or folder, and with subfiles=true those of its children.
func (a *API) OCSListShares(w http.ResponseWriter, r *http.Request, u meta.User) {
	q := r.URL.Query()
	keep := func(string, meta.Node) bool { return true }
	if raw, ok := q["path"]; ok {
		p, err := vpath.Clean(raw[0])
		if err != nil {
			writeOCSError(w, r, errs.E("api.ocsShares", errs.Invalid, raw[0], err))
			return
		}
		n, err := a.D.Stat(r.Context(), u.ID, p)
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		switch {
		case q.Get("subfiles") == "true":
			if !n.IsDir {
				writeOCSError(w, r, errs.Errorf("api.ocsShares", errs.Invalid, "not a directory"))
				return
			}
			keep = func(sp string, _ meta.Node) bool { return sp != p && vpath.Parent(sp) == p }
		default:
			keep = func(sp string, _ meta.Node) bool { return sp == p }
		}
	}
	out, err := a.ocsShares(r, u, q.Get("shared_with_me") == "true", keep)
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	writeOCS(w, r, out)
}

// ocsFind finds the share OCS id names among u's (made by u, or with u).
func (a *API) ocsFind(r *http.Request, u meta.User, raw string) (ocsShare, *meta.Share, *meta.Link, *meta.Mount, error) {
	ctx := r.Context()
	id, link, err := parseOCSID(raw)
	if err != nil {
		return ocsShare{}, nil, nil, nil, err
	}
	if link {
		ls, err := a.D.Links(ctx, u.ID)
		if err != nil {
			return ocsShare{}, nil, nil, nil, err
		}
		for _, l := range ls {
			if l.ID == id {
				n, err := a.D.Stat(ctx, u.ID, l.Path)
				if err != nil {
					break
				}
				return a.ocsLink(r, u, l, n), nil, &l, nil, nil
			}
		}
		return ocsShare{}, nil, nil, nil, errNoShare
	}
	ss, err := a.D.Shares(ctx, u.ID)
	if err != nil {
		return ocsShare{}, nil, nil, nil, err
	}
	for _, sh := range ss {
		if sh.ID == id && sh.Path != "" {
			n, err := a.D.Stat(ctx, u.ID, sh.Path)
			if err != nil {
				break
			}
			return a.ocsOwnShare(r, u, sh, n), &sh, nil, nil, nil
		}
	}
	ms, err := a.D.SharedWithMe(ctx, u.ID)
	if err != nil {
		return ocsShare{}, nil, nil, nil, err
	}
	for _, m := range ms {
		if m.ShareID == id {
			return a.ocsIncoming(r, u, m), nil, nil, &m, nil
		}
	}
	return ocsShare{}, nil, nil, nil, errNoShare
}

// OCSGetShare answers GET …/shares/{id}: a list of the one share.
func (a *API) OCSGetShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	s, _, _, _, err := a.ocsFind(r, u, r.PathValue("id"))
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	writeOCS(w, r, ocsShareList{s})
}

// OCSDeleteShare answers DELETE …/shares/{id}: the owner revokes a link or
// a share; a recipient leaves a share made with them (a group share stays
// for the group's other members).
func (a *API) OCSDeleteShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	_, sh, l, m, err := a.ocsFind(r, u, r.PathValue("id"))
	switch {
	case err != nil:
	case l != nil:
		err = a.D.RevokeLink(r.Context(), u.ID, l.ID)
	case sh != nil:
		err = a.D.Unshare(r.Context(), u.ID, sh.ID)
	default:
		err = a.D.LeaveShare(r.Context(), u.ID, m.Path)
	}
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	a.Log.Info("ocs: share deleted", "user", u.Name, "id", r.PathValue("id"))
	writeOCS(w, r, ocsShareList{})
}

// OCSCreateShare answers POST …/shares: a public link (shareType 3) or a
// share with a user (0) or a group (1) of the file or folder at path.
func (a *API) OCSCreateShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	const op = "api.ocsShares"
	ctx := r.Context()
	v, err := ocsParams(w, r)
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	if v.Get("path") == "" {
		writeOCSError(w, r, errs.Errorf(op, errs.NotFound, "please specify a file or folder path"))
		return
	}
	p, err := vpath.Clean(v.Get("path"))
	if err != nil {
		writeOCSError(w, r, errs.E(op, errs.Invalid, v.Get("path"), err))
		return
	}
	n, err := a.D.Stat(ctx, u.ID, p)
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	bits := -1
	if raw := v.Get("permissions"); raw != "" {
		if bits, err = strconv.Atoi(raw); err != nil || bits <= 0 || bits > 31 {
			writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "invalid permissions %q", raw))
			return
		}
	}
	shareType, err := strconv.Atoi(v.Get("shareType"))
	if err != nil {
		writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "unknown share type %q", v.Get("shareType")))
		return
	}
	switch shareType {
	case ocsShareLink:
		o := drive.LinkOptions{Password: v.Get("password"), Perm: meta.LinkRead}
		switch {
		case v.Get("publicUpload") == "true":
			o.Perm = meta.LinkReadWrite
		case bits > 0:
			if o.Perm, err = ocsLinkPerm(bits); err != nil {
				writeOCSError(w, r, err)
				return
			}
		}
		if raw := v.Get("expireDate"); raw != "" {
			if o.Expires, err = parseOCSExpiry(raw); err != nil {
				writeOCSError(w, r, err)
				return
			}
		}
		token, l, err := a.D.CreateLink(ctx, u.ID, p, o)
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		a.Log.Info("ocs: link made", "user", u.Name, "link", l.ID, "path", l.Path, "permission", l.Perm.String())
		s := a.ocsLink(r, u, l, n)
		s.Token, s.URL = strp(token), baseURL(r)+"/s/"+token
		writeOCS(w, r, s)
	case ocsShareUser, ocsShareGroup:
		to := v.Get("shareWith")
		if to == "" {
			writeOCSError(w, r, errs.Errorf(op, errs.NotFound, "please specify a valid user or group"))
			return
		}
		if v.Get("expireDate") != "" {
			writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "shares between users do not expire on netdisk"))
			return
		}
		write := false
		if bits > 0 {
			if write, err = ocsShareWrite(bits, n.IsDir); err != nil {
				writeOCSError(w, r, err)
				return
			}
		}
		var sh meta.Share
		user, group := to, ""
		if shareType == ocsShareGroup {
			user, group = "", to
			sh, err = a.D.ShareWithGroup(ctx, u.ID, p, to, write)
		} else {
			sh, err = a.D.ShareWithUser(ctx, u.ID, p, to, write)
		}
		if errs.Is(err, errs.Exists) {
			// Shared with them already: the call sets the permission, as
			// the API's does.
			sh, err = a.D.ChangeShare(ctx, u.ID, p, user, group, write)
		}
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		a.Log.Info("ocs: shared", "user", u.Name, "share", sh.ID, "with", to, "write", write)
		writeOCS(w, r, a.ocsOwnShare(r, u, sh, n))
	default:
		writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "unknown share type %d", shareType))
	}
}

// OCSUpdateShare answers PUT …/shares/{id}: a link's password, expiry and
// permissions, a user share's permissions; by the owner only.
func (a *API) OCSUpdateShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	const op = "api.ocsShares"
	ctx := r.Context()
	v, err := ocsParams(w, r)
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	s, sh, l, _, err := a.ocsFind(r, u, r.PathValue("id"))
	if err != nil {
		writeOCSError(w, r, err)
		return
	}
	has := func(k string) bool { _, ok := v[k]; return ok }
	if !has("permissions") && !has("password") && !has("expireDate") && !has("publicUpload") {
		writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "wrong or no update parameter given"))
		return
	}
	bits := -1
	if has("permissions") {
		if bits, err = strconv.Atoi(v.Get("permissions")); err != nil || bits <= 0 || bits > 31 {
			writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "invalid permissions %q", v.Get("permissions")))
			return
		}
	}
	switch {
	case l != nil:
		var c drive.LinkChange
		switch {
		case bits > 0:
			perm, err := ocsLinkPerm(bits)
			if err != nil {
				writeOCSError(w, r, err)
				return
			}
			c.Perm = &perm
		case v.Get("publicUpload") == "true":
			perm := meta.LinkReadWrite
			c.Perm = &perm
		case v.Get("publicUpload") == "false":
			perm := meta.LinkRead
			c.Perm = &perm
		}
		if has("password") {
			pw := v.Get("password")
			c.Password = &pw
		}
		if has("expireDate") {
			var exp time.Time // "" removes the expiry
			if raw := v.Get("expireDate"); raw != "" {
				if exp, err = parseOCSExpiry(raw); err != nil {
					writeOCSError(w, r, err)
					return
				}
			}
			c.Expires = &exp
		}
		nl, err := a.D.UpdateLink(ctx, u.ID, l.ID, c)
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		n, err := a.D.Stat(ctx, u.ID, nl.Path)
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		writeOCS(w, r, a.ocsLink(r, u, nl, n))
	case sh != nil:
		if has("password") || v.Get("expireDate") != "" {
			writeOCSError(w, r, errs.Errorf(op, errs.Invalid, "shares between users have no password or expiry on netdisk"))
			return
		}
		if bits < 0 {
			writeOCS(w, r, s)
			return
		}
		write, err := ocsShareWrite(bits, s.ItemType == "folder")
		if err == nil {
			err = a.D.SetShareWrite(ctx, u.ID, sh.ID, write)
		}
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		sh.Write = write
		n, err := a.D.Stat(ctx, u.ID, sh.Path)
		if err != nil {
			writeOCSError(w, r, err)
			return
		}
		writeOCS(w, r, a.ocsOwnShare(r, u, *sh, n))
	default:
		writeOCSError(w, r, errs.Errorf(op, errs.Permission, "only the owner changes a share"))
	}
}
