package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

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
		{Pattern: "GET /api/v1/admin/stats", Handler: a.stats, Admin: true},
		{Pattern: "POST /api/v1/admin/gc", Handler: a.gc, Admin: true},
		{Pattern: "POST /api/v1/admin/fsck", Handler: a.fsck, Admin: true},
	}
}

// AdminUser is a user as admins see it: never the password hash.
type AdminUser struct {
	Name       string    `json:"name"`
	Admin      bool      `json:"admin"`
	Quota      int64     `json:"quota"`      // bytes; 0 = unlimited
	Finished   int64     `json:"finished"`   // bytes in the user's files
	Unfinished int64     `json:"unfinished"` // bytes held by open upload sessions
	Uploading  int64     `json:"uploading"`  // sizes declared by open uploads (quota ledger)
	Created    time.Time `json:"created"`
}

func adminUser(u meta.User) AdminUser {
	return AdminUser{Name: u.Name, Admin: u.IsAdmin, Quota: u.QuotaTotal, Finished: u.Finished,
		Unfinished: u.Unfinished, Created: u.Created.UTC()}
}

// AddUserRequest is the body of POST /api/v1/admin/users.
type AddUserRequest struct {
	Name     string `json:"name"`
	Password string `json:"password"`
	Admin    bool   `json:"admin"`
	Quota    int64  `json:"quota"`
}

// PasswordRequest is the body of PUT /api/v1/admin/users/{name}/password.
type PasswordRequest struct {
	Password string `json:"password"`
}

// QuotaRequest is the body of PUT /api/v1/admin/users/{name}/quota. A pointer,
// so a body without "quota" is refused instead of silently meaning unlimited.
type QuotaRequest struct {
	Quota *int64 `json:"quota"`
}

// StatsBody is the answer of GET /api/v1/admin/stats.
type StatsBody struct {
	Users         int64   `json:"users"`
	Files         int64   `json:"files"`
	Dirs          int64   `json:"dirs"`
	LogicalBytes  int64   `json:"logicalBytes"`
	PhysicalBytes int64   `json:"physicalBytes"`
	Chunks        int64   `json:"chunks"`
	DedupRatio    float64 `json:"dedupRatio"` // logical / physical; 0 when nothing is stored
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
	out := make([]AdminUser, 0, len(us))
	for _, u := range us {
		out = append(out, a.withUsage(r, adminUser(u), u.ID))
	}
	WriteJSON(w, http.StatusOK, map[string]any{"users": out})
}

func (a *API) addUser(w http.ResponseWriter, r *http.Request, _ meta.User) {
	var req AddUserRequest
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
func (a *API) withUsage(r *http.Request, au AdminUser, uid int64) AdminUser {
	q, err := a.D.QuotaOf(r.Context(), uid)
	if err != nil {
		a.Log.Warn("admin: quota ledger", "user", au.Name, "err", err)
		return au
	}
	au.Quota, au.Finished, au.Unfinished, au.Uploading = q.Total, q.Finished, q.Unfinished, q.Uploading
	return au
}

func (a *API) deleteUser(w http.ResponseWriter, r *http.Request, actor meta.User) {
	name := r.PathValue("name")
	if err := a.D.DeleteUserAs(r.Context(), actor, name); err != nil {
		a.WriteError(w, r, userError(name, err))
		return
	}
	a.Log.Info("admin: user deleted", "name", name, "by", actor.Name)
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) setPassword(w http.ResponseWriter, r *http.Request, actor meta.User) {
	name := r.PathValue("name")
	var req PasswordRequest
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if err := a.D.SetPassword(r.Context(), name, req.Password); err != nil {
		a.WriteError(w, r, userError(name, err))
		return
	}
	a.Log.Info("admin: password changed", "name", name, "by", actor.Name)
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) setQuota(w http.ResponseWriter, r *http.Request, actor meta.User) {
	name := r.PathValue("name")
	var req QuotaRequest
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
	WriteJSON(w, http.StatusOK, StatsBody{Users: st.Users, Files: st.Files, Dirs: st.Dirs,
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
	WriteJSON(w, http.StatusOK, res)
}

// NDJSON is the media type of streamed fsck progress.
const NDJSON = "application/x-ndjson"

// FsckEvent is one line of a streamed fsck: progress lines, then exactly one
// line with either Result or Error.
type FsckEvent struct {
	Progress *FsckProgress     `json:"progress,omitempty"`
	Result   *drive.FsckResult `json:"result,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// FsckProgress counts chunks checked so far.
type FsckProgress struct {
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
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
	if !strings.Contains(r.Header.Get("Accept"), NDJSON) {
		res, err := a.D.Fsck(ctx, nil)
		if err != nil {
			a.WriteError(w, r, err)
			return
		}
		a.logFsck(actor, res)
		WriteJSON(w, http.StatusOK, res)
		return
	}
	w.Header().Set("Content-Type", NDJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(ev FsckEvent) error {
		if err := enc.Encode(ev); err != nil {
			return err
		}
		return rc.Flush()
	}
	send(FsckEvent{Progress: &FsckProgress{}})
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
		send(FsckEvent{Progress: &FsckProgress{Done: done, Total: total}})
	})
	if err != nil {
		if ctx.Err() == nil {
			a.Log.Error("admin: fsck", "err", err)
		}
		send(FsckEvent{Error: errs.Message(err)})
		return
	}
	a.logFsck(actor, res)
	send(FsckEvent{Result: &res})
}

func (a *API) logFsck(actor meta.User, res drive.FsckResult) {
	if len(res.Problems) > 0 {
		a.Log.Warn("admin: fsck found problems", "by", actor.Name, "checked", res.Checked, "problems", len(res.Problems))
		return
	}
	a.Log.Info("admin: fsck clean", "by", actor.Name, "checked", res.Checked)
}
