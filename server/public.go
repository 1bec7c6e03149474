package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"netdisk/dav"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/bytesize"
	"netdisk/meta"
	"netdisk/vpath"
	"netdisk/web"
)

// The public side of links: BASE/s/TOKEN, for whoever holds the URL,
// without an account (docs/API.md "Public links").
//
//	GET  /s/{token}            the page: a file's name, size and Download; a
//	                           folder's listing (?p=/sub inside it); a
//	                           password form while locked
//	POST /s/{token}            the password form: unlocks the link for this
//	                           browser (a cookie scoped to /s/{token})
//	GET  /s/{token}/dl?p=…     a file's bytes, always as an attachment
//	GET  /s/{token}/zip?p=…    a folder as a zip, streamed
//	GET  /s/{token}/raw?p=…    an image's bytes for the page's preview
//
// Every request resolves its token again (drive.ResolveLink): a link
// revoked, expired or used up is refused from the next request, on a
// connection already open too. Whatever makes a token reach nothing gets
// the one answer a random token gets, and a wrong password the one answer
// a password for a random token gets: nothing tells which tokens exist.
// Paths are relative to the linked folder and cleaned by vpath.CleanRel
// (no "..", however encoded: the mux has decoded it by then), then joined
// under the folder's current path, so no request names anything outside.

// publicCookie is the unlocked state of a password link: a MAC of the
// token keyed by the link's password hash, so it proves the password was
// given without being one, and a new link (or a revoked one) unlocks
// nothing.
const publicCookie = "netdisk_link"

func (s *Server) mountPublic() {
	s.mux.HandleFunc("GET /s/{token}", s.publicPage)
	s.mux.HandleFunc("POST /s/{token}", s.publicUnlock)
	s.mux.HandleFunc("GET /s/{token}/dl", s.publicDownload)
	s.mux.HandleFunc("GET /s/{token}/zip", s.publicZip)
	s.mux.HandleFunc("GET /s/{token}/raw", s.publicRaw)
	s.mux.HandleFunc(publicDAVPrefix, s.publicDAV)
	s.mountPublicUpload()
}

// publicHeaders are on every public answer: the page shows names chosen by
// someone else to whoever opens it, so nothing it shows may run, load from
// elsewhere, or be framed.
func publicHeaders(w http.ResponseWriter, nonce string) {
	publicHeadersScript(w, nonce, false)
}

// publicHeadersScript is publicHeaders for a page that writes (a file
// drop, a read-write folder): its one script, by nonce (its module
// imports nothing), the upload Worker, and calls to this origin.
func publicHeadersScript(w http.ResponseWriter, nonce string, script bool) {
	hd := w.Header()
	csp := "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if nonce != "" {
		// The page: its one style, and the preview of an image from here.
		csp += "; style-src 'nonce-" + nonce + "'; img-src 'self'"
	}
	if nonce != "" && script {
		csp += "; script-src 'nonce-" + nonce + "'; worker-src 'self'; connect-src 'self'"
	}
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
}

func unlockMAC(l meta.Link, token string) string {
	m := hmac.New(sha256.New, []byte(l.PassHash))
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// unlocked reports whether r may use l: a link without a password always,
// one with only with the cookie its password gave.
func unlocked(r *http.Request, l meta.Link, token string) bool {
	if l.PassHash == "" {
		return true
	}
	c, err := r.Cookie(publicCookie)
	return err == nil && hmac.Equal([]byte(c.Value), []byte(unlockMAC(l, token)))
}

// resolvePublic resolves the request's token; on any failure it has
// answered (the random token's answer, or 503 when the store is away).
func (s *Server) resolvePublic(w http.ResponseWriter, r *http.Request) (drive.PublicLink, string, bool) {
	token := r.PathValue("token")
	pl, err := s.resolveToken(w, r, token)
	if err != nil {
		if err != errThrottled {
			s.publicError(w, r, err)
		}
		return drive.PublicLink{}, "", false
	}
	return pl, token, true
}

// errThrottled is resolveToken's answer once it has answered 429.
var errThrottled = errs.Errorf("server.public", errs.Throttled, "too many tries")

// resolveToken resolves token under the guessing throttle; a throttled
// request is answered here (errThrottled), any other error is the
// caller's to answer.
func (s *Server) resolveToken(w http.ResponseWriter, r *http.Request, token string) (drive.PublicLink, error) {
	ip := clientIP(r)
	// Guessing tokens is throttled as guessing passwords is: every token
	// that reaches nothing counts a failure of the address, and a locked
	// address is refused before any look-up, whatever token it sends (a
	// hit must not show through the lock). Only a failure is admitted and
	// counted: a folder page's many parallel requests are no guesses.
	if wait := s.logins.retryAfter(linkGuessAccount, ip, false); wait > 0 {
		s.publicThrottled(w, ip, wait)
		return drive.PublicLink{}, errThrottled
	}
	pl, err := s.d.ResolveLink(r.Context(), token)
	if errs.Is(err, errs.NotFound) {
		if _, ok, _ := s.logins.admit(linkGuessAccount, ip, false); ok {
			s.logins.done(linkGuessAccount, ip, true, false)
		}
	}
	return pl, err
}

// linkGuessAccount is the throttle's account for tokens that reach nothing:
// no user name can be it (names are printable).
const linkGuessAccount = "\x00link token"

func (s *Server) publicThrottled(w http.ResponseWriter, ip string, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64((max(wait, time.Second)+time.Second-1)/time.Second), 10))
	s.log.Info("public link throttled", "addr", ip)
	s.renderPublic(w, http.StatusTooManyRequests, publicView{Title: "Too many tries", Message: "Too many wrong links or passwords from your address: try again later."})
}

// publicError answers err: NotFound as "no such link" whatever its cause.
func (s *Server) publicError(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusNotFound
	msg := "This link does not exist, or has ended."
	if !errs.Is(err, errs.NotFound) {
		status, msg = errs.HTTPStatus(errs.KindOf(err)), "The drive cannot answer now: try again later."
		s.log.Warn("public link", "err", err)
	}
	s.renderPublic(w, status, publicView{Title: "No such link", Message: msg})
}

// target is the node the request's ?p= names inside the link: the linked
// node itself for "" or "/", else a path below a linked folder.
func (s *Server) publicTarget(w http.ResponseWriter, r *http.Request, pl drive.PublicLink) (string, string, bool) {
	rel, err := vpath.CleanRel(r.URL.Query().Get("p"))
	if err != nil || (rel != "" && !pl.Root.IsDir) {
		s.publicError(w, r, drive.ErrNoLink)
		return "", "", false
	}
	if rel == "" {
		return pl.Root.Path, "/", true
	}
	return vpath.Join(pl.Root.Path, rel), "/" + rel, true
}

type publicEntry struct {
	Name, Href, Size string
	Rel              string // the path below the link's folder (read-write pages)
	IsDir            bool
}

type publicCrumb struct{ Name, Href string }

type publicView struct {
	Nonce, Title, Message, Action string
	// Write is the link's base (/s/TOKEN) on a page that writes: a file
	// drop (Drop), or a read-write folder (IsFolder); Dir is the folder
	// shown, relative to the link's.
	Write, Dir                string
	Password, WrongPassword   bool
	IsFile, IsFolder, Drop    bool
	Name, Size, Download, Zip string
	Image, Text               string // the file's preview: an image's URL, or the start of a text
	Crumbs                    []publicCrumb
	Entries                   []publicEntry
}

// publicStyle is the page's only style, allowed by the answer's nonce.
const publicStyle = `
body{font:16px/1.5 system-ui,sans-serif;max-width:56rem;margin:0 auto;padding:1rem;color:#222}
h1{font-size:1.3rem;word-break:break-word}a{color:#0b57d0}
table{width:100%;border-collapse:collapse}td{padding:.4rem;border-bottom:1px solid #eee;word-break:break-word}
td.size{text-align:right;white-space:nowrap;color:#666}.crumbs{color:#666}
.btn{display:inline-block;padding:.5rem 1rem;background:#0b57d0;color:#fff;border-radius:4px;text-decoration:none;border:0;font:inherit}
input[type=password]{font:inherit;padding:.4rem}.err{color:#b00020}
img.preview{max-width:100%;height:auto}pre.preview{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:.5rem}
h2{font-size:1.05rem;margin:1.5rem 0 .5rem}.muted{color:#666}
.zone{border:2px dashed #9aa7b8;border-radius:8px;padding:1.5rem 1rem;text-align:center;background:#f8fafd}
.zone.over{border-color:#0b57d0;background:#e8f0fe}.zone p{margin:.4rem 0}
.pick{position:absolute;width:1px;height:1px;opacity:0;overflow:hidden}label.btn{cursor:pointer}
.ups{list-style:none;padding:0;margin:0}.ups li{padding:.5rem 0;border-bottom:1px solid #eee;display:flex;flex-wrap:wrap;gap:.25rem .75rem;align-items:center}
.up-name{flex:1 1 12rem;min-width:0;word-break:break-word}.up-meta{color:#666;font-size:.9rem;flex:1 1 100%}
.bar{flex:1 1 100%;height:6px;background:#e6e6e6;border-radius:3px;overflow:hidden}.bar span{display:block;height:100%;width:0;background:#0b57d0}
.ups li[data-state=done] .bar span{background:#188038}.ups li[data-state=error] .up-meta{color:#b00020}
button.small{font:inherit;font-size:.9rem;padding:.2rem .6rem;border:1px solid #9aa7b8;border-radius:4px;background:#fff;cursor:pointer}
td.acts{text-align:right}td.acts button{margin:.1rem 0 .1rem .25rem}
form.rename{display:flex;flex-wrap:wrap;gap:.25rem}form.rename input{font:inherit;flex:1 1 6rem;width:6rem;min-width:0;padding:.2rem}
`

// writeHTML writes the page of v. It is built by hand, every value through
// html.EscapeString (text and quoted attributes alike; the URLs are ours:
// a fixed base and query-escaped paths), rather than with html/template:
// executing a template makes the linker keep every exported method of
// every reachable type (cmd/netdisk TestBinaryExecutesNoTemplate).
func (v *publicView) writeHTML(w io.Writer) error {
	var b strings.Builder
	e := html.EscapeString
	b.WriteString(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>` + e(v.Title) + ` · netdisk</title>
<style nonce="` + e(v.Nonce) + `">` + publicStyle + `</style></head><body>
<h1>` + e(v.Title) + "</h1>\n")
	if v.Message != "" {
		b.WriteString("<p>" + e(v.Message) + "</p>\n")
	}
	if v.Password {
		b.WriteString(`<form method="post" action="` + e(v.Action) + "\">\n")
		if v.WrongPassword {
			b.WriteString(`<p class="err">Wrong password.</p>` + "\n")
		}
		b.WriteString(`<label>Password <input type="password" name="password" autocomplete="current-password" autofocus required></label>
<button class="btn" type="submit">Open</button></form>` + "\n")
	}
	if v.IsFile {
		b.WriteString("<p>" + e(v.Size) + `</p><p><a class="btn" href="` + e(v.Download) + `" download>Download</a></p>` + "\n")
		if v.Image != "" {
			b.WriteString(`<p><img class="preview" src="` + e(v.Image) + `" alt=""></p>`)
		}
		if v.Text != "" {
			b.WriteString(`<pre class="preview">` + e(v.Text) + "</pre>")
		}
		b.WriteString("\n")
	}
	if v.IsFolder {
		b.WriteString(`<p class="crumbs">`)
		for i, c := range v.Crumbs {
			if i > 0 {
				b.WriteString(" / ")
			}
			b.WriteString(`<a href="` + e(c.Href) + `">` + e(c.Name) + "</a>")
		}
		b.WriteString("</p>\n" + `<p><a class="btn" href="` + e(v.Zip) + `">Download all as zip</a></p>` + "\n")
		if v.Write != "" {
			v.writeDrop(&b, "Sent from this browser to this folder")
		}
		b.WriteString("<table>")
		for _, en := range v.Entries {
			slash := ""
			if en.IsDir {
				slash = "/"
			}
			b.WriteString(`<tr data-path="` + e(en.Rel) + `" data-name="` + e(en.Name) + `"><td class="name"><a href="` + e(en.Href) + `">` + e(en.Name) + slash + `</a></td><td class="size">` + e(en.Size) + "</td>")
			if v.Write != "" {
				b.WriteString(`<td class="acts"><button type="button" class="small rename">Rename</button><button type="button" class="small delete">Delete</button></td>`)
			}
			b.WriteString("</tr>")
		}
		b.WriteString("</table>\n")
	}
	if v.Drop {
		b.WriteString("<p>Files you add here go to the owner of this folder. Nothing in it is shown: below is only what this browser sent.</p>\n")
		v.writeDrop(&b, "Sent from this browser")
	}
	if v.Write != "" {
		b.WriteString(`<script type="module" nonce="` + e(v.Nonce) + `" src="/static/public-upload.js"></script>` + "\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDrop writes the upload area of a page that writes: a drop zone with
// a file picker, a one-line message, and the list of this browser's
// uploads (filled by /static/public-upload.js, names as text only).
func (v *publicView) writeDrop(b *strings.Builder, listTitle string) {
	e := html.EscapeString
	mode := "drop"
	if !v.Drop {
		mode = "rw"
	}
	b.WriteString(`<section id="drop" data-base="` + e(v.Write) + `" data-dir="` + e(v.Dir) + `" data-mode="` + mode + `">
<div id="drop-zone" class="zone"><p>Drag files here, or</p><p><label class="btn" for="drop-pick">Choose files</label><input id="drop-pick" class="pick" type="file" multiple></p></div>
<p id="drop-msg" class="err" role="alert" hidden></p>
<h2>` + e(listTitle) + `</h2><p id="drop-empty" class="muted">Nothing yet.</p><ul id="drop-list" class="ups"></ul></section>
`)
}

func (s *Server) renderPublic(w http.ResponseWriter, status int, v publicView) {
	b := make([]byte, 16)
	rand.Read(b) // crypto/rand.Read never fails (it panics if the OS cannot provide)
	v.Nonce = base64.RawURLEncoding.EncodeToString(b)
	publicHeadersScript(w, v.Nonce, v.Write != "")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := v.writeHTML(w); err != nil {
		s.log.Warn("public page", "err", err)
	}
}

func linkBase(token string) string { return "/s/" + token }

func (s *Server) publicPage(w http.ResponseWriter, r *http.Request) {
	pl, token, ok := s.resolvePublic(w, r)
	if !ok {
		return
	}
	base := linkBase(token)
	if !unlocked(r, pl.Link, token) {
		s.renderPublic(w, http.StatusUnauthorized, publicView{Title: "This link needs a password", Password: true, Action: base})
		return
	}
	if pl.Perm == meta.LinkUpload {
		s.renderPublic(w, http.StatusOK, publicView{Title: pl.Root.Name(), Drop: true, Write: base})
		return
	}
	full, rel, ok := s.publicTarget(w, r, pl)
	if !ok {
		return
	}
	n, children, err := s.d.ListDir(r.Context(), pl.Owner.ID, full)
	if err != nil {
		s.publicError(w, r, err)
		return
	}
	q := func(p string) string { return "?p=" + url.QueryEscape(p) }
	if !n.IsDir {
		v := publicView{Title: n.Name(), IsFile: true, Size: bytesize.Format(n.Size), Download: base + "/dl" + q(rel)}
		s.preview(r, pl, n, &v, base+"/raw"+q(rel))
		s.renderPublic(w, http.StatusOK, v)
		return
	}
	v := publicView{Title: n.Name(), IsFolder: true, Zip: base + "/zip" + q(rel)}
	if pl.Perm == meta.LinkReadWrite {
		v.Write, v.Dir = base, strings.TrimPrefix(rel, "/")
	}
	if rel == "/" {
		v.Title = pl.Root.Name()
	}
	v.Crumbs = append(v.Crumbs, publicCrumb{Name: pl.Root.Name(), Href: base})
	if rel != "/" {
		acc := ""
		for _, part := range splitRel(rel) {
			acc += "/" + part
			v.Crumbs = append(v.Crumbs, publicCrumb{Name: part, Href: base + q(acc)})
		}
	}
	for _, c := range children {
		p := rel
		if p == "/" {
			p = ""
		}
		p += "/" + c.Name()
		// A file's name opens its own page (its preview and Download).
		e := publicEntry{Name: c.Name(), IsDir: c.IsDir, Href: base + q(p), Rel: strings.TrimPrefix(p, "/")}
		if !c.IsDir {
			e.Size = bytesize.Format(c.Size)
		}
		v.Entries = append(v.Entries, e)
	}
	s.renderPublic(w, http.StatusOK, v)
}

func splitRel(rel string) []string {
	var out []string
	for p := rel; p != "/" && p != ""; p = vpath.Parent(p) {
		out = append([]string{vpath.Base(p)}, out...)
	}
	return out
}

// publicUnlock checks the password form: throttled per link and address as
// sign-in is per account and address; a token that reaches nothing is
// answered as a wrong password (and counted as one), so the form tells
// nothing either.
func (s *Server) publicUnlock(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	base := linkBase(token)
	ip := clientIP(r)
	account := "\x00link " + token
	wrong := func(status int) {
		s.renderPublic(w, status, publicView{Title: "This link needs a password", Password: true, WrongPassword: true, Action: base})
	}
	if wait, ok, _ := s.logins.admit(account, ip, true); !ok {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((max(wait, time.Second)+time.Second-1)/time.Second), 10))
		s.log.Info("public link throttled", "addr", ip)
		wrong(http.StatusTooManyRequests)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	password := r.PostFormValue("password")
	pl, err := s.d.ResolveLink(r.Context(), token)
	if err != nil && !errs.Is(err, errs.NotFound) {
		s.logins.done(account, ip, false, false)
		s.publicError(w, r, err)
		return
	}
	if err != nil || pl.PassHash == "" || !drive.LinkPasswordOK(pl.Link, password) {
		s.logins.done(account, ip, true, false)
		s.log.Info("public link: wrong password", "addr", ip)
		wrong(http.StatusUnauthorized)
		return
	}
	s.logins.done(account, ip, true, true)
	http.SetCookie(w, &http.Cookie{Name: publicCookie, Value: unlockMAC(pl.Link, token), Path: base,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: web.Secure(r)})
	publicHeaders(w, "")
	http.Redirect(w, r, base, http.StatusSeeOther)
}

// publicOpen resolves the request for a download: the link, unlocked,
// allowing reads, and the owner's path of ?p=.
func (s *Server) publicOpen(w http.ResponseWriter, r *http.Request) (drive.PublicLink, string, bool) {
	pl, token, ok := s.resolvePublic(w, r)
	if !ok {
		return pl, "", false
	}
	// A file drop serves nothing, and a locked link nothing but its form:
	// both answer here as no link at all.
	if pl.Perm == meta.LinkUpload || !unlocked(r, pl.Link, token) {
		s.publicError(w, r, drive.ErrNoLink)
		return pl, "", false
	}
	full, _, ok := s.publicTarget(w, r, pl)
	return pl, full, ok
}

func (s *Server) publicDownload(w http.ResponseWriter, r *http.Request) {
	pl, full, ok := s.publicOpen(w, r)
	if !ok {
		return
	}
	rd, err := s.d.Open(r.Context(), pl.Owner.ID, full)
	if err != nil {
		if errs.Is(err, errs.IsDir) {
			err = drive.ErrNoLink
		}
		s.publicError(w, r, err)
		return
	}
	defer rd.Close()
	n := rd.Node()
	// A range request after the first is the same download resumed, not
	// another one.
	if r.Header.Get("Range") == "" {
		if err := s.d.CountLinkDownload(r.Context(), pl.Link); err != nil {
			s.publicError(w, r, err)
			return
		}
	}
	publicHeaders(w, "")
	dav.ProtectHeaders(w.Header())
	w.Header().Set("Content-Type", dav.NodeContentType(n))
	// Always an attachment: the bytes are someone else's, and served from
	// the drive's own origin.
	w.Header().Set("Content-Disposition", dav.Attachment(n.Path))
	if err := dav.ServeReader(w, r, s.d, rd, n.Path, n.ModTime, s.log); err != nil {
		s.publicError(w, r, err)
	}
}

func (s *Server) publicZip(w http.ResponseWriter, r *http.Request) {
	pl, full, ok := s.publicOpen(w, r)
	if !ok {
		return
	}
	if n, err := s.d.Stat(r.Context(), pl.Owner.ID, full); err != nil || !n.IsDir {
		if err == nil {
			err = drive.ErrNoLink
		}
		s.publicError(w, r, err)
		return
	}
	if err := s.d.CountLinkDownload(r.Context(), pl.Link); err != nil {
		s.publicError(w, r, err)
		return
	}
	publicHeaders(w, "")
	// The page's zip, run as the owner on the owner's path of the folder:
	// the path was confined to the link above.
	r2 := r.Clone(r.Context())
	r2.URL.RawQuery = url.Values{"path": {full}}.Encode()
	s.web.ServeZip(w, r2, pl.Owner)
}

// previewText is how much of a text file the page shows.
const previewText = 64 << 10

// previewable reports whether n may be previewed on l's page: an image or
// a plain text, and only on a link without a download bound (a preview is
// the file's bytes, uncounted).
func previewable(l meta.Link, n meta.Node) (image, text bool) {
	if l.MaxDownloads > 0 || !n.IsFile() {
		return false, false
	}
	ct := dav.NodeContentType(n)
	if !dav.Inline(ct) {
		return false, false
	}
	return strings.HasPrefix(ct, "image/"), strings.HasPrefix(ct, "text/plain")
}

// preview fills v's preview of file n: an image's URL, or the start of a
// text, shown escaped as any name is.
func (s *Server) preview(r *http.Request, pl drive.PublicLink, n meta.Node, v *publicView, raw string) {
	image, text := previewable(pl.Link, n)
	switch {
	case image:
		v.Image = raw
	case text:
		rd, err := s.d.Open(r.Context(), pl.Owner.ID, n.Path)
		if err != nil {
			return
		}
		defer rd.Close()
		b, err := io.ReadAll(io.LimitReader(rd, previewText))
		if err != nil {
			return
		}
		if len(b) == previewText {
			// Not cut inside a character.
			for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
				b = b[:len(b)-1]
			}
		}
		if utf8.Valid(b) {
			v.Text = string(b)
		}
	}
}

// publicRaw serves an image for the page's preview, inline, under the
// strictest policy; anything else is the random token's answer.
func (s *Server) publicRaw(w http.ResponseWriter, r *http.Request) {
	pl, full, ok := s.publicOpen(w, r)
	if !ok {
		return
	}
	rd, err := s.d.Open(r.Context(), pl.Owner.ID, full)
	if err != nil {
		if errs.Is(err, errs.IsDir) {
			err = drive.ErrNoLink
		}
		s.publicError(w, r, err)
		return
	}
	defer rd.Close()
	n := rd.Node()
	if image, _ := previewable(pl.Link, n); !image {
		s.publicError(w, r, drive.ErrNoLink)
		return
	}
	publicHeaders(w, "")
	dav.ProtectHeaders(w.Header())
	w.Header().Set("Content-Type", dav.NodeContentType(n))
	if err := dav.ServeReader(w, r, s.d, rd, n.Path, n.ModTime, s.log); err != nil {
		s.publicError(w, r, err)
	}
}
