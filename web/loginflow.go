package web

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

// Login Flow v2 is how the Nextcloud desktop and mobile clients get an app
// password without ever seeing the account's password:
//
//  1. the client POSTs /index.php/login/v2 and gets a poll token and
//     endpoint, and a login URL it opens in the user's browser;
//  2. the user signs in to our page there and grants access to the named
//     device;
//  3. the client, polling the endpoint with its token, gets 404 until then
//     and once afterwards {server, loginName, appPassword}: the app token
//     (drive.AddToken), named after the device, is made by that poll.
//
// The poll token (held by the client) and the login token (in the URL,
// seen by the browser and its history) are two secrets: whoever sees the
// login URL can offer a grant but never collect the password. Both carry
// 256 random bits and are kept by their SHA-256 only, in the metadata store
// the nodes share (meta.LoginFlows): a flow started through one node is
// granted through another and polled through either. No password is ever
// stored: the grant records who granted, and the app token exists only
// from the poll that collects it. A flow lives LoginFlowTTL on the injected
// clock.

// LoginFlowTTL is how long a flow can be granted and then collected
// (Nextcloud's own lifetime, which the clients' timeouts expect).
const LoginFlowTTL = 20 * time.Minute

// Bounds on what unauthenticated clients can make the store hold or try.
const (
	// maxLoginFlows caps the pending flows: a start beyond it is refused
	// (429) until some expire, so starting flows in a loop cannot grow
	// the store without bound.
	maxLoginFlows = 10000
	// pollMissLimit unknown-token polls from one address per
	// pollMissWindow are answered 404 as any other; beyond them, 429. A
	// pending flow's own polls (every few seconds for minutes) never count.
	// Counted per node: an address guessing through several nodes gets
	// the limit of each.
	pollMissLimit  = 20
	pollMissWindow = time.Minute
)

// PollResult is what a granted flow hands its client, once.
type PollResult struct {
	Server      string `json:"server"`
	LoginName   string `json:"loginName"`
	AppPassword string `json:"appPassword"`
}

type missCount struct {
	start time.Time
	n     int
}

// LoginFlows runs the flows kept in a store.
type LoginFlows struct {
	Now func() time.Time
	TTL time.Duration
	Max int // pending flows at most (maxLoginFlows when 0)

	store meta.LoginFlows

	mu     sync.Mutex
	misses map[string]*missCount
}

// NewLoginFlows returns the flows kept in store, on clock now.
func NewLoginFlows(store meta.LoginFlows, now func() time.Time) *LoginFlows {
	if now == nil {
		now = time.Now
	}
	return &LoginFlows{Now: now, TTL: LoginFlowTTL, store: store, misses: map[string]*missCount{}}
}

// Start begins a flow for the device (the client's User-Agent) on server
// (the base URL the client reached) and returns its poll and login tokens.
func (f *LoginFlows) Start(ctx context.Context, device, server string) (pollToken, loginToken string, err error) {
	limit := f.Max
	if limit <= 0 {
		limit = maxLoginFlows
	}
	now := f.Now()
	pollToken, loginToken = randomToken(), randomToken()
	err = f.store.AddLoginFlow(ctx, meta.LoginFlow{PollHash: key(pollToken), LoginHash: key(loginToken), Device: device, Server: server,
		Expires: now.Add(f.TTL)}, limit, now)
	if err != nil {
		return "", "", err
	}
	return pollToken, loginToken, nil
}

var errNoFlow = errs.Errorf("web.loginflow", errs.NotFound, "no such sign-in, or it expired")

// noFlow answers every flow the store does not have as one error, whatever
// the store's words: unknown, expired, granted, collected look the same.
func noFlow(err error) error {
	if errs.Is(err, errs.NotFound) {
		return errNoFlow
	}
	return err
}

// Device names the device of a pending flow by its login token; NotFound
// for an unknown, expired, or already granted one. The store finds the row
// by the hash of a 256-bit secret, which tells a timing observer nothing.
func (f *LoginFlows) Device(ctx context.Context, loginToken string) (string, error) {
	if loginToken == "" {
		return "", errNoFlow
	}
	fl, err := f.store.PendingLoginFlow(ctx, key(loginToken), f.Now())
	if err != nil {
		return "", noFlow(err)
	}
	return fl.Device, nil
}

// Grant marks the flow of loginToken granted by user uid. NotFound for an
// unknown, expired or already granted flow.
func (f *LoginFlows) Grant(ctx context.Context, loginToken string, uid int64) error {
	if loginToken == "" {
		return errNoFlow
	}
	return noFlow(f.store.GrantLoginFlow(ctx, key(loginToken), uid, f.Now()))
}

// Poll answers a client's poll from address addr: once the flow is granted,
// mint makes the app password for the granting user and the flow's device
// and the flow ends (a second poll is NotFound); NotFound while it is
// pending and for any token that names no flow, alike. Throttled when addr
// has polled too many unknown tokens lately.
func (f *LoginFlows) Poll(ctx context.Context, addr, pollToken string, mint func(uid int64, device string) (loginName, appPassword string, err error)) (PollResult, error) {
	now := f.Now()
	f.mu.Lock()
	for a, m := range f.misses {
		if now.Sub(m.start) >= pollMissWindow {
			delete(f.misses, a)
		}
	}
	m := f.misses[addr]
	throttled := m != nil && m.n >= pollMissLimit
	f.mu.Unlock()
	if throttled {
		return PollResult{}, errs.Errorf("web.loginflow", errs.Throttled, "too many polls of unknown sign-ins: retry later")
	}
	var fl meta.LoginFlow
	err := errNoFlow
	if pollToken != "" {
		fl, err = f.store.TakeLoginFlow(ctx, key(pollToken), now)
	}
	if errs.Is(err, errs.NotFound) {
		f.mu.Lock()
		if m = f.misses[addr]; m == nil {
			m = &missCount{start: now}
			f.misses[addr] = m
		}
		m.n++
		f.mu.Unlock()
		return PollResult{}, errNoFlow
	}
	if err != nil {
		return PollResult{}, err
	}
	if fl.UserID == 0 {
		return PollResult{}, errNoFlow // pending
	}
	name, pass, err := mint(fl.UserID, fl.Device)
	if err != nil {
		return PollResult{}, err
	}
	return PollResult{Server: fl.Server, LoginName: name, AppPassword: pass}, nil
}

// deviceName makes a token name (drive.ValidTokenName) of a client's
// User-Agent: printable characters only, at most 56 bytes, so a suffix
// telling two grants of the same client apart still fits in 64.
func deviceName(ua string) string {
	var b strings.Builder
	for _, r := range strings.TrimSpace(ua) {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len()+utf8.RuneLen(r) > 56 {
			break
		}
		b.WriteRune(r)
	}
	if s := strings.TrimSpace(b.String()); s != "" {
		return s
	}
	return "unknown device"
}

// mintAppToken makes user uid an app token named after device, numbered
// when the user already has one of that name (each grant is its own
// password, revocable alone).
func mintAppToken(ctx context.Context, d *drive.Drive, uid int64, device string) (string, error) {
	base := deviceName(device)
	name := base
	for i := 2; ; i++ {
		secret, _, err := d.AddToken(ctx, uid, name)
		if !errs.Is(err, errs.Exists) || i > 1000 {
			return secret, err
		}
		name = base + " (" + itoa(int64(i)) + ")"
	}
}

// baseURL is the address the client reached us at: where its WebDAV and
// its poll go. Secure tells the scheme (a trusted proxy's
// X-Forwarded-Proto included).
func baseURL(r *http.Request) string {
	scheme := "http"
	if Secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (h *Handler) serveFlowStart(w http.ResponseWriter, r *http.Request) {
	base := baseURL(r)
	poll, login, err := h.flows.Start(r.Context(), r.UserAgent(), base)
	if err != nil {
		if errs.Is(err, errs.Throttled) {
			w.Header().Set("Retry-After", "60")
		}
		WriteError(w, err)
		return
	}
	type pollBody struct {
		Token    string `json:"token"`
		Endpoint string `json:"endpoint"`
	}
	writeJSON(w, http.StatusOK, struct {
		Poll  pollBody `json:"poll"`
		Login string   `json:"login"`
	}{pollBody{poll, base + "/index.php/login/v2/poll"}, base + "/index.php/login/v2/flow/" + login})
}

func (h *Handler) servePoll(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	// The clients send a form; Nextcloud also takes JSON and the query,
	// so other clients of its API may.
	token := r.FormValue("token")
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			Token string `json:"token"`
		}
		if json.NewDecoder(r.Body).Decode(&body) == nil && body.Token != "" {
			token = body.Token
		}
	}
	res, err := h.flows.Poll(r.Context(), remoteHost(r), token, func(uid int64, device string) (string, string, error) {
		u, err := h.d.UserByID(r.Context(), uid)
		if err != nil {
			return "", "", err
		}
		secret, err := mintAppToken(r.Context(), h.d, uid, device)
		return u.Name, secret, err
	})
	if err != nil {
		if errs.Is(err, errs.Throttled) {
			w.Header().Set("Retry-After", itoa(int64(pollMissWindow/time.Second)))
		}
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// serveGrantPage is the login URL: the grant screen (grant.html), which
// reads the flow's token from its own path.
func (h *Handler) serveGrantPage(w http.ResponseWriter, r *http.Request) {
	h.writeAsset(w, r, "/grant.html")
}

// flowSession is the signed-in user the grant screen acts for; it answers
// the request itself when there is none, or a state-changing request lacks
// the session's CSRF token.
func (h *Handler) flowSession(w http.ResponseWriter, r *http.Request) (Session, int64, string, bool) {
	ss, u, err := h.sessionUser(r)
	if errs.Is(err, errs.NotFound) {
		WriteError(w, errNotSignedIn)
		return Session{}, 0, "", false
	}
	if err != nil {
		h.storeError(w, "session", err)
		return Session{}, 0, "", false
	}
	if r.Method != http.MethodGet && !ss.CSRFOK(r.Header.Get(CSRFHeader)) {
		WriteError(w, errCSRF)
		return Session{}, 0, "", false
	}
	return ss, u.ID, u.Name, true
}

func (h *Handler) serveFlowInfo(w http.ResponseWriter, r *http.Request) {
	if _, _, _, ok := h.flowSession(w, r); !ok {
		return
	}
	device, err := h.flows.Device(r.Context(), r.PathValue("token"))
	if err != nil {
		WriteError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Device string `json:"device"`
	}{device})
}

func (h *Handler) serveFlowGrant(w http.ResponseWriter, r *http.Request) {
	_, uid, name, ok := h.flowSession(w, r)
	if !ok {
		return
	}
	err := h.flows.Grant(r.Context(), r.PathValue("token"), uid)
	if err != nil {
		if !errs.Is(err, errs.NotFound) {
			h.log.Error("web: login flow grant", "user", name, "err", err)
		}
		WriteError(w, err)
		return
	}
	h.log.Info("web: login flow granted", "user", name)
	w.WriteHeader(http.StatusNoContent)
}
