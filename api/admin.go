package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// adminRoutes are the calls behind `netdisk admin`. The server enforces admin
// rights for every one of them (Route.Admin), so handlers only decode, call the
// drive and encode. Documented in docs/admin.md.
func (a *API) adminRoutes() []Route {
	return []Route{
		{Pattern: "GET /api/v1/admin/users", Handler: a.listUsers, Admin: true},
		{Pattern: "POST /api/v1/admin/users", Handler: a.addUser, Admin: true},
		{Pattern: "GET /api/v1/admin/users/{name}", Handler: a.getUser, Admin: true},
		{Pattern: "DELETE /api/v1/admin/users/{name}", Handler: a.deleteUser, Admin: true},
		{Pattern: "PUT /api/v1/admin/users/{name}/password", Handler: a.setPassword, Admin: true},
		{Pattern: "PUT /api/v1/admin/users/{name}/quota", Handler: a.setQuota, Admin: true},
		{Pattern: "DELETE /api/v1/admin/users/{name}/trash", Handler: a.purgeTrash, Admin: true},
		{Pattern: "GET /api/v1/admin/stats", Handler: a.stats, Admin: true},
		{Pattern: "POST /api/v1/admin/gc", Handler: a.gc, Admin: true},
		{Pattern: "POST /api/v1/admin/fsck", Handler: a.fsck, Admin: true},
	}
}

func adminUser(u meta.User) apitype.AdminUser {
	return apitype.AdminUser{Name: u.Name, Admin: u.IsAdmin, Quota: u.QuotaTotal, Finished: u.Finished,
		Unfinished: u.Unfinished, Metadata: u.Meta, Created: u.Created.UTC()}
}

// DedupRatio is logical/physical, rounded to two decimals; 0 for an empty store.
func DedupRatio(logical, physical int64) float64 {
	if physical <= 0 {
		return 0
	}
	return math.Round(float64(logical)/float64(physical)*100) / 100
}

// userError names the user in a not-found answer ("no such user" alone does
// not say which one when scripts loop over names).
func userError(name string, err error) error {
	if errs.Is(err, errs.NotFound) {
		return errs.E("api.admin", errs.NotFound, "", fmt.Errorf("no such user %q", name))
	}
	return err
}

func (a *API) listUsers(w http.ResponseWriter, r *http.Request, _ meta.User) {
	us, err := a.D.Users(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	trash, err := a.D.TrashUsage(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	versions, err := a.D.VersionUsage(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := make([]apitype.AdminUser, 0, len(us))
	for _, u := range us {
		au := a.withUsage(r, adminUser(u), u.ID)
		au.Trash, au.Versions = trash[u.ID], versions[u.ID]
		out = append(out, au)
	}
	WriteJSON(w, http.StatusOK, apitype.UserList{Users: out})
}

func (a *API) addUser(w http.ResponseWriter, r *http.Request, _ meta.User) {
	var req apitype.NewUser
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	u, err := a.D.AddUser(r.Context(), req.Name, req.Password, req.Admin, req.Quota)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: user added", "name", u.Name, "admin", u.IsAdmin, "quota", u.QuotaTotal)
	w.Header().Set("Location", "/api/v1/admin/users/"+u.Name)
	WriteJSON(w, http.StatusCreated, adminUser(u))
}

func (a *API) getUser(w http.ResponseWriter, r *http.Request, _ meta.User) {
	name := r.PathValue("name")
	u, err := a.D.User(r.Context(), name)
	if err != nil {
		a.WriteError(w, r, userError(name, err))
		return
	}
	WriteJSON(w, http.StatusOK, a.withUsage(r, adminUser(u), u.ID))
}

// withUsage fills in the quota ledger's figures (unfinished as received, not
// as last flushed to SQLite, and uploading); when the ledger cannot answer
// (Redis down) the database's figures stay.
func (a *API) withUsage(r *http.Request, au apitype.AdminUser, uid int64) apitype.AdminUser {
	q, err := a.D.QuotaOf(r.Context(), uid)
	if err != nil {
		a.Log.Warn("admin: quota ledger", "user", au.Name, "err", err)
		return au
	}
	au.Quota, au.Finished, au.Unfinished, au.Uploading, au.Metadata = q.Total, q.Finished, q.Unfinished, q.Uploading, q.Metadata
	return au
}

func (a *API) deleteUser(w http.ResponseWriter, r *http.Request, actor meta.User) {
	name := r.PathValue("name")
	a.userChanged(w, r, actor, name, "user deleted", a.D.DeleteUserAs(r.Context(), actor, name))
}

// userChanged answers a change to user name that has no body to return:
// its error in the wire's terms, or 204 and a line in the log saying what
// was done and by whom.
func (a *API) userChanged(w http.ResponseWriter, r *http.Request, actor meta.User, name, what string, err error) {
	if err != nil {
		a.WriteError(w, r, userError(name, err))
		return
	}
	a.Log.Info("admin: "+what, "name", name, "by", actor.Name)
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) setPassword(w http.ResponseWriter, r *http.Request, actor meta.User) {
	name := r.PathValue("name")
	if a.refuseToken(w, r, "set passwords") {
		return
	}
	var req apitype.PasswordRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.userChanged(w, r, actor, name, "password changed", a.D.SetPassword(r.Context(), name, req.Password))
}

func (a *API) setQuota(w http.ResponseWriter, r *http.Request, actor meta.User) {
	name := r.PathValue("name")
	var req apitype.QuotaRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if req.Quota == nil {
		a.WriteError(w, r, errs.Errorf("api.setQuota", errs.Invalid, `missing "quota" (bytes; 0 = unlimited)`))
		return
	}
	ctx := r.Context()
	if err := a.D.SetQuota(ctx, name, *req.Quota); err != nil {
		a.WriteError(w, r, userError(name, err))
		return
	}
	u, err := a.D.User(ctx, name)
	if err != nil {
		a.WriteError(w, r, userError(name, err))
		return
	}
	a.Log.Info("admin: quota set", "name", name, "quota", u.QuotaTotal, "by", actor.Name)
	WriteJSON(w, http.StatusOK, a.withUsage(r, adminUser(u), u.ID))
}

func (a *API) stats(w http.ResponseWriter, r *http.Request, _ meta.User) {
	st, err := a.D.Stats(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, apitype.Stats{Users: st.Users, Files: st.Files, Dirs: st.Dirs,
		LogicalBytes: st.LogicalBytes, PhysicalBytes: st.PhysicalBytes, Chunks: st.Chunks,
		DedupRatio: DedupRatio(st.LogicalBytes, st.PhysicalBytes)})
}

func (a *API) gc(w http.ResponseWriter, r *http.Request, actor meta.User) {
	res, err := a.D.GC(r.Context())
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: gc", "by", actor.Name, "chunks", res.Chunks, "bytes", res.Bytes)
	WriteJSON(w, http.StatusOK, apitype.GCResult{Chunks: res.Chunks, Bytes: res.Bytes, OrphanBlobs: res.OrphanBlobs, SkippedInUse: res.SkippedInUse})
}

// fsckResult converts the drive's result, keeping a nil list of problems
// nil (the answer says "problems": null then, as it always has).
func fsckResult(res drive.FsckResult) apitype.FsckResult {
	out := apitype.FsckResult{Checked: res.Checked, Bytes: res.Bytes}
	if res.Problems != nil {
		out.Problems = make([]apitype.FsckProblem, len(res.Problems))
		for i, p := range res.Problems {
			out.Problems[i] = apitype.FsckProblem{SHA256: p.SHA256, Problem: p.Problem, Detail: p.Detail}
		}
	}
	return out
}

// fsckProgressSteps bounds how many progress lines a check sends, whatever
// the store's size: a line per 0.5 %, plus the first and the last.
const fsckProgressSteps = 200

// fsck re-hashes every chunk. Problems found are the answer, not an error:
// the status is 200 and the caller decides. A client that accepts NDJSON gets
// progress while the check runs (it may take hours on a large store); since
// the status is sent first, a failure then arrives in-band as {"error"}.
func (a *API) fsck(w http.ResponseWriter, r *http.Request, actor meta.User) {
	ctx := r.Context()
	if !strings.Contains(r.Header.Get("Accept"), apitype.NDJSON) {
		res, err := a.D.Fsck(ctx, nil)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		a.logFsck(actor, res)
		WriteJSON(w, http.StatusOK, fsckResult(res))
		return
	}
	w.Header().Set("Content-Type", apitype.NDJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(ev apitype.FsckEvent) error {
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	}
	send(apitype.FsckEvent{Progress: &apitype.FsckProgress{}})
	lastStep := int64(-1)
	res, err := a.D.Fsck(ctx, func(done, total int64) {
		step := fsckProgressSteps
		if total > 0 {
			step = int(done * fsckProgressSteps / total)
		}
		if int64(step) == lastStep && done != total {
			return
		}
		lastStep = int64(step)
		send(apitype.FsckEvent{Progress: &apitype.FsckProgress{Done: done, Total: total}})
	})
	if err != nil {
		if ctx.Err() == nil {
			a.Log.Error("admin: fsck", "err", err)
		}
		send(apitype.FsckEvent{Error: errs.Message(err), Code: errs.Code(err)})
		return
	}
	a.logFsck(actor, res)
	out := fsckResult(res)
	send(apitype.FsckEvent{Result: &out})
}

func (a *API) logFsck(actor meta.User, res drive.FsckResult) {
	if len(res.Problems) > 0 {
		a.Log.Warn("admin: fsck found problems", "by", actor.Name, "checked", res.Checked, "problems", len(res.Problems))
		return
	}
	a.Log.Info("admin: fsck clean", "by", actor.Name, "checked", res.Checked)
}

// purgeTrash deletes a user's trash items for good, those deleted longer
// than olderThan (a Go duration) ago, or all of them.
func (a *API) purgeTrash(w http.ResponseWriter, r *http.Request, actor meta.User) {
	var age time.Duration
	if s := r.URL.Query().Get("olderThan"); s != "" {
		var err error
		if age, err = time.ParseDuration(s); err != nil || age <= 0 {
			a.WriteError(w, r, errs.Errorf("api.PurgeTrash", errs.Invalid, "olderThan=%q: want a positive duration such as 720h", s))
			return
		}
	}
	name := r.PathValue("name")
	n, err := a.D.PurgeTrash(r.Context(), name, age)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("admin: trash purged", "by", actor.Name, "user", name, "older_than", age, "items", n)
	WriteJSON(w, http.StatusOK, apitype.TrashEmptied{Deleted: n})
}
