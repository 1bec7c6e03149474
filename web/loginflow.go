package web

import (
	"context"
	"crypto/subtle"
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
)

// Login Flow v2 is how the Nextcloud desktop and mobile clients get an app
// password without ever seeing the account's password:
//
//  1. the client POSTs /index.php/login/v2 and gets a poll token and
//     endpoint, and a login URL it opens in the user's browser;
//  2. the user signs in to our page there and grants access to the named
//     device, which makes an app token (drive.AddToken) named after it;
//  3. the client, polling the endpoint with its token, gets 404 until then
//     and once afterwards {server, loginName, appPassword}.
//
// The poll token (held by the client) and the login token (in the URL,
// seen by the browser and its history) are two secrets: whoever sees the
// login URL can offer a grant but never collect the password. Both carry
// 256 random bits and are kept by their SHA-256 only. A flow lives
// LoginFlowTTL on the injected clock, in this node's memory: a flow is a few
// minutes of one client's sign-in, so losing it to a restart costs a retry;
// behind several nodes its paths are routed to one (docs/API.md).

// LoginFlowTTL is how long a flow can be granted and then collected
// (Nextcloud's own lifetime, which the clients' timeouts expect).
const LoginFlowTTL = 20 * time.Minute

// Bounds on what unauthenticated clients can make the node hold or try.
const (
	// maxLoginFlows caps the pending flows: a start beyond it is refused
	// (429) until some expire, so starting flows in a loop cannot grow
	// memory without bound.
	maxLoginFlows = 10000
	// pollMissLimit unknown-token polls from one address per
	// pollMissWindow are answered 404 as any other; beyond them, 429. A
	// pending flow's own polls (every few seconds for minutes) never count.
	pollMissLimit  = 20
	pollMissWindow = time.Minute
)

// PollResult is what a granted flow hands its client, once.
type PollResult struct {
	Server      string `json:"server"`
	LoginName   string `json:"loginName"`
	AppPassword string `json:"appPassword"`
}

type loginFlow struct {
	pollHash, loginHash string
	device              string
	server              string
	expires             time.Time
	granting            bool // a grant is making the app token
	result              *PollResult
}

type missCount struct {
	start time.Time
	n     int
}

// LoginFlows holds the pending flows of one node.
type LoginFlows struct {
	Now func() time.Time
	TTL time.Duration
	Max int // pending flows at most (maxLoginFlows when 0)

	mu      sync.Mutex
	byPoll  map[string]*loginFlow
	byLogin map[string]*loginFlow
	misses  map[string]*missCount
}

// NewLoginFlows returns an empty set of flows on clock now.
func NewLoginFlows(now func() time.Time) *LoginFlows {
	if now == nil {
		now = time.Now
	}
	return &LoginFlows{Now: now, TTL: LoginFlowTTL, byPoll: map[string]*loginFlow{}, byLogin: map[string]*loginFlow{}, misses: map[string]*missCount{}}
}

// Start begins a flow for the device (the client's User-Agent) on server
// (the base URL the client reached) and returns its poll and login tokens.
func (f *LoginFlows) Start(device, server string) (pollToken, loginToken string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.Now()
	f.sweep(now)
	limit := f.Max
	if limit <= 0 {
		limit = maxLoginFlows
	}
	if len(f.byPoll) >= limit {
		return "", "", errs.Errorf("web.loginflow", errs.Throttled, "too many sign-ins in progress: retry later")
	}
	pollToken, loginToken = randomToken(), randomToken()
	fl := &loginFlow{pollHash: key(pollToken), loginHash: key(loginToken), device: device, server: server, expires: now.Add(f.TTL)}
	f.byPoll[fl.pollHash] = fl
	f.byLogin[fl.loginHash] = fl
	return pollToken, loginToken, nil
}

// sweep drops expired flows and address counts; the caller holds mu.
func (f *LoginFlows) sweep(now time.Time) {
	for k, fl := range f.byPoll {
		if !now.Before(fl.expires) {
			f.drop(fl)
			delete(f.byPoll, k)
		}
	}
	for a, m := range f.misses {
		if now.Sub(m.start) >= pollMissWindow {
			delete(f.misses, a)
		}
	}
}

func (f *LoginFlows) drop(fl *loginFlow) {
	delete(f.byPoll, fl.pollHash)
	delete(f.byLogin, fl.loginHash)
}

// find returns the live flow stored under hash h in m; the caller holds
// mu. The map finds the entry by the hash of a 256-bit secret, which tells
// a timing observer nothing; the comparison of the stored hash is constant
// time all the same, so no path compares a secret byte by byte.
func (f *LoginFlows) find(m map[string]*loginFlow, token string, now time.Time) *loginFlow {
	if token == "" {
		return nil
	}
	h := key(token)
	fl, ok := m[h]
	if !ok {
		return nil
	}
	if subtle.ConstantTimeCompare([]byte(h), []byte(fl.pollHash)) != 1 && subtle.ConstantTimeCompare([]byte(h), []byte(fl.loginHash)) != 1 {
		return nil
	}
	if !now.Before(fl.expires) {
		f.drop(fl)
		return nil
	}
	return fl
}

var errNoFlow = errs.Errorf("web.loginflow", errs.NotFound, "no such sign-in, or it expired")

// Device names the device of a pending flow by its login token; NotFound
// for an unknown, expired, or already granted one.
func (f *LoginFlows) Device(loginToken string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.find(f.byLogin, loginToken, f.Now())
	if fl == nil || fl.granting || fl.result != nil {
		return "", errNoFlow
	}
	return fl.device, nil
}

// Grant completes the flow of loginToken: mint makes the app password for
// the flow's device (called once, outside the lock: it writes the store).
// NotFound for an unknown, expired or already granted flow.
func (f *LoginFlows) Grant(loginToken string, mint func(device string) (loginName, appPassword string, err error)) error {
	f.mu.Lock()
	fl := f.find(f.byLogin, loginToken, f.Now())
	if fl == nil || fl.granting || fl.result != nil {
		f.mu.Unlock()
		return errNoFlow
	}
	fl.granting = true
	f.mu.Unlock()
	name, pass, err := mint(fl.device)
	f.mu.Lock()
	defer f.mu.Unlock()
	fl.granting = false
	if err != nil {
		return err
	}
	fl.result = &PollResult{Server: fl.server, LoginName: name, AppPassword: pass}
	return nil
}

// Poll answers a client's poll from address addr: the result once the flow
// is granted (and the flow ends: a second poll is NotFound), NotFound
// while it is pending and for any token that names no flow, alike.
// Throttled when addr has polled too many unknown tokens lately.
func (f *LoginFlows) Poll(addr, pollToken string) (PollResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.Now()
	m := f.misses[addr]
	if m != nil && now.Sub(m.start) >= pollMissWindow {
		delete(f.misses, addr)
		m = nil
	}
	if m != nil && m.n >= pollMissLimit {
		return PollResult{}, errs.Errorf("web.loginflow", errs.Throttled, "too many polls of unknown sign-ins: retry later")
	}
	fl := f.find(f.byPoll, pollToken, now)
	if fl == nil {
		if m == nil {
			m = &missCount{start: now}
			f.misses[addr] = m
		}
		m.n++
		return PollResult{}, errNoFlow
	}
	if fl.result == nil {
		return PollResult{}, errNoFlow
	}
	f.drop(fl)
	return *fl.result, nil
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
	poll, login, err := h.flows.Start(r.UserAgent(), base)
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
	res, err := h.flows.Poll(remoteHost(r), token)
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
	device, err := h.flows.Device(r.PathValue("token"))
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
	err := h.flows.Grant(r.PathValue("token"), func(device string) (string, string, error) {
		secret, err := mintAppToken(r.Context(), h.d, uid, device)
		return name, secret, err
	})
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
