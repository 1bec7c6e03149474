package api

import (
	"errors"
	"net/http"
	"strconv"

	"netdisk/apitype"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// linkRoutes are the signed-in user's public links (docs/API.md "Public
// links"); what a link's holder reaches is served by server/ at /s/TOKEN.
func (a *API) linkRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/links", Handler: a.listLinks},
		{Pattern: "POST /api/v1/links", Handler: a.addLink},
		{Pattern: "DELETE /api/v1/links/{id}", Handler: a.removeLink},
	}
}

func apiLink(l meta.Link) apitype.Link {
	out := apitype.Link{ID: l.ID, Path: l.Path, Permission: l.Perm.String(), Password: l.PassHash != "",
		MaxDownloads: l.MaxDownloads, Downloads: l.Downloads, Created: l.Created.UTC()}
	if !l.Expires.IsZero() {
		exp := l.Expires.UTC()
		out.Expires = &exp
	}
	if !l.Last.IsZero() {
		last := l.Last.UTC()
		out.LastUse = &last
	}
	return out
}

// linkPerm reads a permission's wire name; "" is read.
func linkPerm(s string) (meta.LinkPerm, error) {
	switch s {
	case "", apitype.LinkRead:
		return meta.LinkRead, nil
	case apitype.LinkUpload:
		return meta.LinkUpload, nil
	case apitype.LinkReadWrite:
		return meta.LinkReadWrite, nil
	}
	return 0, errs.Errorf("api.linkPerm", errs.Invalid, "unknown link permission %q: read, upload or read-write", s)
}

func (a *API) listLinks(w http.ResponseWriter, r *http.Request, u meta.User) {
	ls, err := a.D.Links(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.LinkList{Links: make([]apitype.Link, 0, len(ls))}
	for _, l := range ls {
		out.Links = append(out.Links, apiLink(l))
	}
	WriteJSON(w, http.StatusOK, out)
}

func (a *API) addLink(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.NewLink
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	perm, err := linkPerm(req.Permission)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	o := drive.LinkOptions{Password: req.Password, Perm: perm, MaxDownloads: req.MaxDownloads}
	if req.Expires != nil {
		o.Expires = *req.Expires
	}
	token, l, err := a.D.CreateLink(r.Context(), u.ID, req.Path, o)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("share: link made", "user", u.Name, "link", l.ID, "path", l.Path, "permission", perm.String())
	out := apiLink(l)
	out.Token = token
	out.URL = "/s/" + token
	WriteJSON(w, http.StatusCreated, out)
}

func (a *API) removeLink(w http.ResponseWriter, r *http.Request, u meta.User) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		// Not a number names no link: the same answer as an unknown one.
		a.WriteError(w, r, errs.E("api.removeLink", errs.NotFound, "", errors.New("no such link")))
		return
	}
	if err := a.D.RevokeLink(r.Context(), u.ID, id); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("share: link revoked", "user", u.Name, "link", id)
	w.WriteHeader(http.StatusNoContent)
}
