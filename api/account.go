package api

import (
	"net/http"

	"netdisk/apitype"
	"netdisk/drive"
	"netdisk/meta"
)

// accountRoutes are the signed-in user's own account: their password and
// their app tokens (docs/API.md "Account"). What a token must not do (change
// the password, make or revoke tokens) the drive refuses by the request's
// context (drive.RefuseToken).
func (a *API) accountRoutes() []Route {
	return []Route{
		{Pattern: "PUT /api/v1/account/password", Handler: a.changePassword},
		{Pattern: "GET /api/v1/account/tokens", Handler: a.listTokens},
		{Pattern: "POST /api/v1/account/tokens", Handler: a.addToken},
		{Pattern: "DELETE /api/v1/account/tokens/{name}", Handler: a.removeToken},
	}
}

func (a *API) changePassword(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.ChangePassword
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	if a.refuseToken(w, r, "change the password") {
		return
	}
	if a.VerifyPassword != nil && !a.VerifyPassword(w, r, u.Name, req.Old) {
		return
	}
	if err := a.D.ChangePassword(r.Context(), u.ID, req.Old, req.New); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("account: password changed", "user", u.Name)
	w.WriteHeader(http.StatusNoContent)
}

func apiToken(t meta.AppToken) apitype.Token {
	out := apitype.Token{Name: t.Name, Created: t.Created.UTC()}
	if !t.Last.IsZero() {
		last := t.Last.UTC()
		out.LastUse = &last
	}
	return out
}

func (a *API) listTokens(w http.ResponseWriter, r *http.Request, u meta.User) {
	ts, err := a.D.Tokens(r.Context(), u.ID)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	out := apitype.TokenList{Tokens: make([]apitype.Token, 0, len(ts))}
	for _, t := range ts {
		out.Tokens = append(out.Tokens, apiToken(t))
	}
	WriteJSON(w, http.StatusOK, out)
}

func (a *API) addToken(w http.ResponseWriter, r *http.Request, u meta.User) {
	var req apitype.NewToken
	if err := ReadJSON(r, &req); err != nil {
		a.WriteError(w, r, err)
		return
	}
	secret, t, err := a.D.AddToken(r.Context(), u.ID, req.Name)
	if err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("account: app token made", "user", u.Name, "token", t.Name)
	out := apiToken(t)
	out.Secret = secret
	WriteJSON(w, http.StatusCreated, out)
}

func (a *API) removeToken(w http.ResponseWriter, r *http.Request, u meta.User) {
	name := r.PathValue("name")
	if err := a.D.RemoveToken(r.Context(), u.ID, name); err != nil {
		a.WriteError(w, r, err)
		return
	}
	a.Log.Info("account: app token revoked", "user", u.Name, "token", name)
	w.WriteHeader(http.StatusNoContent)
}

// refuseToken answers 403 when the request was signed in by an app token.
func (a *API) refuseToken(w http.ResponseWriter, r *http.Request, what string) bool {
	if err := drive.RefuseToken(r.Context(), "api", what); err != nil {
		a.WriteError(w, r, err)
		return true
	}
	return false
}
