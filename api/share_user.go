package api

import (
	"net/http"
	"strconv"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/meta"
)

// userShareRoutes are shares between users and the groups they name
// (docs/API.md "Shares between users"); what they allow is decided in the
// drive, like every path's access.
func (a *API) userShareRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/user-shares", Handler: a.listUserShares},
		{Pattern: "POST /api/v1/user-shares", Handler: a.addUserShare},
		{Pattern: "PUT /api/v1/user-shares/{id}", Handler: a.setUserShare},
		{Pattern: "DELETE /api/v1/user-shares/{id}", Handler: a.removeUserShare},
		{Pattern: "POST /api/v1/user-shares/leave", Handler: a.leaveUserShare},
		{Pattern: "GET /api/v1/admin/groups", Handler: a.listGroups, Admin: true},
		{Pattern: "POST /api/v1/admin/groups", Handler: a.addGroup, Admin: true},
		{Pattern: "DELETE /api/v1/admin/groups/{name}", Handler: a.removeGroup, Admin: true},
		{Pattern: "PUT /api/v1/admin/groups/{name}/members/{user}", Handler: a.addGroupMember, Admin: true},
		{Pattern: "DELETE /api/v1/admin/groups/{name}/members/{user}", Handler: a.removeGroupMember, Admin: true},
	}
}

func apiUserShare(s meta.Share) apitype.UserShare {
	return apitype.UserShare{ID: s.ID, Path: s.Path, To: s.ToName, Group: s.ToGroup != 0, Write: s.Write, Created: s.Created.UTC()}
}

func (a *API) listUserShares(w http.ResponseWriter, r *http.Request, u meta.User) {
	ss, err := a.D.Shares(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	ms, err := a.D.SharedWithMe(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.UserShareList{Shares: make([]apitype.UserShare, 0, len(ss)), SharedWithMe: make([]apitype.SharedWithMe, 0, len(ms))}
	for _, s := range ss {
		out.Shares = append(out.Shares, apiUserShare(s))
	}
	for _, m := range ms {
		out.SharedWithMe = append(out.SharedWithMe, apitype.SharedWithMe{Path: m.Path, Owner: m.OwnerName, Write: m.Write, IsDir: m.TargetDir, Group: m.Group})
	}
	WriteJSON(w, http.StatusOK, out)
}

func (a *API) addUserShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.NewUserShare
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	var s meta.Share
	var err error
	switch {
	case (req.User == "") == (req.Group == ""):
		err = errs.Errorf("api.Share", errs.Invalid, "name one user or one group")
	case req.User != "":
		s, err = a.D.ShareWithUser(r.Context(), u.ID, req.Path, req.User, req.Write)
	default:
		s, err = a.D.ShareWithGroup(r.Context(), u.ID, req.Path, req.Group, req.Write)
	}
	status := http.StatusCreated
	if errs.Is(err, errs.Exists) {
		// Shared with them already: the call sets the permission.
		s, err = a.D.ChangeShare(r.Context(), u.ID, req.Path, req.User, req.Group, req.Write)
		status = http.StatusOK
	}
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("share: made", "user", u.Name, "share", s.ID, "to", s.ToName, "write", s.Write)
	WriteJSON(w, status, apiUserShare(s))
}

func shareID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.Errorf("api.Share", errs.Invalid, "share id %q: want a positive integer", r.PathValue("id"))
	}
	return id, nil
}

func (a *API) setUserShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	id, err := shareID(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	var req apitype.UserShareWrite
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.D.SetShareWrite(r.Context(), u.ID, id, req.Write); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) removeUserShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	id, err := shareID(r)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.D.Unshare(r.Context(), u.ID, id); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("share: revoked", "user", u.Name, "share", id)
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) leaveUserShare(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.LeaveShare
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.D.LeaveShare(r.Context(), u.ID, req.Path); err != nil {
		a.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func apiGroup(g meta.Group) apitype.Group {
	out := apitype.Group{Name: g.Name, Members: g.Members, Created: g.Created.UTC()}
	if out.Members == nil {
		out.Members = []string{}
	}
	return out
}

func (a *API) listGroups(w http.ResponseWriter, r *http.Request, _ meta.User) {
	gs, err := a.D.Groups(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := make([]apitype.Group, 0, len(gs))
	for _, g := range gs {
		out = append(out, apiGroup(g))
	}
	WriteJSON(w, http.StatusOK, out)
}

func (a *API) addGroup(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.NewGroup
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	g, err := a.D.AddGroup(r.Context(), req.Name)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: group added", "by", u.Name, "group", g.Name)
	WriteJSON(w, http.StatusCreated, apiGroup(g))
}

func (a *API) removeGroup(w http.ResponseWriter, r *http.Request, u meta.User) {
	if err := a.D.RemoveGroup(r.Context(), r.PathValue("name")); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: group removed", "by", u.Name, "group", r.PathValue("name"))
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) addGroupMember(w http.ResponseWriter, r *http.Request, u meta.User) {
	if err := a.D.AddGroupMember(r.Context(), r.PathValue("name"), r.PathValue("user")); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: group member added", "by", u.Name, "group", r.PathValue("name"), "member", r.PathValue("user"))
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) removeGroupMember(w http.ResponseWriter, r *http.Request, u meta.User) {
	if err := a.D.RemoveGroupMember(r.Context(), r.PathValue("name"), r.PathValue("user")); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: group member removed", "by", u.Name, "group", r.PathValue("name"), "member", r.PathValue("user"))
	w.WriteHeader(http.StatusNoContent)
}
