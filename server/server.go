// Package server assembles netdisk's HTTP surface: authentication, the WebDAV
// handler, the JSON API, health and metrics, and serving the public listener
// under the connection limits. It owns no file logic and no wiring: package
// daemon opens the stores, builds the components and hands them to New.
package server

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"netdisk/api"
	"netdisk/apitype"
	"netdisk/async"
	"netdisk/dav"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/lock"
	"netdisk/meta"
	"netdisk/preview"
	"netdisk/upload"
	"netdisk/web"
)

// MaxHeaderBytes bounds request headers (huge headers get 431 from net/http).
const MaxHeaderBytes = 64 << 10

// Config wires a Server.
type Config struct {
	Drive  *drive.Drive
	Logger *slog.Logger
	Now    func() time.Time
	Upload *upload.Service // the chunked upload API; nil answers it 503
	Locks  *lock.Manager   // the lock API (/api/v1/lock/); nil answers it 503
	// LockStreamRecheck is how often lock event streams re-read their
	// keys' standing; 0 means api.DefaultLockStreamRecheck.
	LockStreamRecheck time.Duration
	Async             *async.Service // the async download API (/api/v1/async/); nil answers it 503
	AsyncRecheck      time.Duration  // see api.API.AsyncRecheck
	// SharedLogins, when set, keeps the login throttle's failure counts in
	// this Redis, shared by the nodes (throttle_redis.go).
	SharedLogins *redis.Client
	// TrustedProxies are the peers whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (proxy.go); from any other peer those
	// headers are dropped.
	TrustedProxies []netip.Prefix
	// Previews makes and keeps thumbnails (/api/v1/thumb and the Nextcloud
	// preview shape); nil answers them 503.
	Previews *preview.Service
}

// Server is the HTTP side of the daemon.
type Server struct {
	d       *drive.Drive
	log     *slog.Logger
	now     func() time.Time
	dav     *dav.Handler
	api     *api.API
	metrics *Metrics
	mux     *http.ServeMux

	logins  *throttle      // failed logins by account and address (throttle.go)
	proxies trustedProxies // peers whose forwarded headers count (proxy.go)
	web     *web.Handler   // the browser interface (web.go)

	streamsDone chan struct{} // closed by EndStreams
	endStreams  sync.Once
}

// New builds the server and its routes.
func New(c Config) *Server {
	s := &Server{d: c.Drive, log: c.Logger, now: c.Now, proxies: c.TrustedProxies}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.logins = newThrottle(s.now)
	if c.SharedLogins != nil {
		s.logins.shared = &sharedFailures{rdb: c.SharedLogins, log: s.log}
	}
	s.metrics = NewMetrics(prometheus.NewRegistry())
	s.dav = dav.NewHandler(c.Drive, "/dav", s.log)
	s.api = api.New(c.Drive, s.log)
	s.api.Upload = c.Upload
	s.streamsDone = make(chan struct{})
	s.api.Locks, s.api.StreamsDone, s.api.StreamRecheck = c.Locks, s.streamsDone, c.LockStreamRecheck
	s.api.Async, s.api.AsyncRecheck = c.Async, c.AsyncRecheck
	s.api.VerifyPassword = s.verifyPassword
	s.api.Previews = c.Previews
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	// Metrics reveal who uses the server and how: admins only on the public
	// listener; Prometheus scrapes the unauthenticated --metrics-listen.
	s.mux.HandleFunc("GET /metrics", s.authed(true, func(w http.ResponseWriter, r *http.Request, _ meta.User) {
		s.MetricsHandler().ServeHTTP(w, r)
	}, s.davUnauthorized))
	s.mux.HandleFunc("/dav/", s.authed(false, s.dav.Serve, s.davUnauthorized))
	s.mux.HandleFunc("/dav", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, "/dav/", http.StatusMovedPermanently)
			return
		}
		s.authed(false, s.dav.Serve, s.davUnauthorized)(w, r)
	})
	s.mountNextcloud()
	for _, rt := range s.api.Routes() {
		h := rt.Handler
		if rt.Public {
			s.mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) { h(w, r, meta.User{}) })
			continue
		}
		s.mux.HandleFunc(rt.Pattern, s.authed(rt.Admin, h, s.apiUnauthorized))
	}
	// The Nextcloud clients' preview shape, signed in as over WebDAV.
	s.mux.HandleFunc("GET /index.php/core/preview", s.authed(false, s.api.NextcloudPreview, s.davUnauthorized))
	s.mux.HandleFunc("GET /index.php/core/preview.png", s.authed(false, s.api.NextcloudPreviewFile, s.davUnauthorized))
	if c.Previews != nil {
		s.metrics.addPreviews(&c.Previews.Counters)
	}
	s.mountWeb()
	s.mountPublic()
	s.mux.HandleFunc("/api/", s.apiNoRoute)
	return s
}

// EndStreams ends the long-lived responses (the lock event streams) so a
// graceful shutdown does not wait its whole grace period for them; their
// clients reconnect to the next daemon.
func (s *Server) EndStreams() { s.endStreams.Do(func() { close(s.streamsDone) }) }

// apiNoRoute answers a request under /api/ that no route takes: 405 with
// Allow when the path is an endpoint called with another method, else 404;
// both with an error body and its code, as every API error.
func (s *Server) apiNoRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/api/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		api.WriteJSON(w, http.StatusMethodNotAllowed, apitype.Error{
			Error: r.Method + " is not a method of " + r.URL.Path + " (allowed: " + strings.Join(allow, ", ") + ")",
			Code:  errs.Invalid.Code(),
		})
		return
	}
	s.api.WriteError(w, r, errs.Errorf("server.api", errs.NotFound, "no such API endpoint: %s %s", r.Method, r.URL.Path))
}

// MetricsHandler serves the metrics in Prometheus text format, without
// authentication (for --metrics-listen; the public route wraps it).
func (s *Server) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
}

// Metrics returns the server's metrics, for other layers to add to.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Handler is the root handler: forwarded headers applied (or dropped) before
// anything reads the request, metrics around everything else.
func (s *Server) Handler() http.Handler {
	return s.proxies.forwarded(s.metrics.wrap(guardBrowser(refuseDotSegments(s.mux))))
}

// refuseDotSegments answers 400 to a path with "." or ".." segments. ServeMux
// would otherwise clean them and redirect, turning an attempt to leave the
// user's root into a quiet 404 or a redirect instead of the refusal the API
// promises.
func refuseDotSegments(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, seg := range strings.Split(r.URL.Path, "/") {
			if seg == "." || seg == ".." {
				err := errs.Errorf("server", errs.Invalid, "invalid path: '%s' segment", seg)
				if strings.HasPrefix(r.URL.Path, "/api/") {
					api.WriteJSON(w, http.StatusBadRequest, api.ErrorBody(err))
				} else {
					http.Error(w, errs.Message(err), http.StatusBadRequest)
				}
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// HTTPServer returns an http.Server with netdisk's limits.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.Handler(),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		HTTP2:             HTTP2Config(),
	}
}

// HTTP2Config is the HTTP/2 side of an https:// listener. An upload's
// stream may run this far ahead of the handler reading it: Go's default, 1
// MiB a stream and a connection, makes a client sending one large file stop
// for a window update every 512 KiB, each a round through both ends'
// goroutines. The connection's window bounds the memory a client can make
// the daemon hold for bodies its handlers do not read (8 MiB a connection
// under the connection limits), so it stays this small: 8 and 16 MiB
// measured no better.
func HTTP2Config() *http.HTTP2Config {
	return &http.HTTP2Config{MaxReceiveBufferPerStream: 4 << 20, MaxReceiveBufferPerConnection: 8 << 20}
}

// unauthorized answers a request refused before its handler: err's kind is
// Unauthenticated (401), Permission (403), Throttled (429) or Unavailable
// (503). WebDAV answers in text, the API with its error body and code.
type unauthorized func(w http.ResponseWriter, r *http.Request, err error)

func (s *Server) davUnauthorized(w http.ResponseWriter, _ *http.Request, err error) {
	if errs.Is(err, errs.Unauthenticated) {
		w.Header().Set("WWW-Authenticate", `Basic realm="netdisk", charset="UTF-8"`)
	}
	errs.SetErrorHeaders(w.Header(), dav.Status(err))
	http.Error(w, errs.Message(err), dav.Status(err))
}

func (s *Server) apiUnauthorized(w http.ResponseWriter, r *http.Request, err error) {
	if errs.Is(err, errs.Unauthenticated) {
		w.Header().Set("WWW-Authenticate", `Basic realm="netdisk", charset="UTF-8"`)
	}
	errs.SetErrorHeaders(w.Header(), api.Status(err))
	api.WriteJSON(w, api.Status(err), api.ErrorBody(err))
}

// authed checks HTTP Basic credentials before h. Failed logins are throttled
// per account and address (throttle.go): a locked-out attempt is answered
// 429 with Retry-After without its password being checked.
func (s *Server) authed(admin bool, h func(http.ResponseWriter, *http.Request, meta.User), deny unauthorized) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, token, ok := s.authenticate(w, r, deny)
		if !ok {
			return
		}
		if token != "" {
			// What only the password may do asks the context (drive.RefuseToken).
			r = r.WithContext(drive.WithToken(r.Context(), token))
		}
		markAuthenticated(r) // connlimit.go: the connection keeps the ordinary timeouts
		if admin && !u.IsAdmin {
			deny(w, r, errs.Errorf("server.auth", errs.Permission, "admin rights required"))
			return
		}
		h(w, r, u)
	}
}

// authenticate checks the request's Basic credentials (or, without them, the
// web page's session cookie: web.go), answering the request itself (401, 403,
// 429, 503) when they do not make a user. token names the app token that
// signed the request in ("" for a password or a session).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, deny unauthorized) (u meta.User, token string, ok bool) {
	if u, ok, handled := s.cookieUser(w, r); handled {
		return u, "", ok
	}
	name, pass, ok := r.BasicAuth()
	if !ok {
		deny(w, r, errs.Errorf("server.auth", errs.Unauthenticated, "authentication required"))
		return meta.User{}, "", false
	}
	return s.login(w, r, name, pass, deny)
}

// login checks a name and a password or app token under the login throttle
// (Basic auth and the web page's sign-in alike), answering the request
// itself when they do not make a user. token names the app token that
// signed in ("" for the password).
func (s *Server) login(w http.ResponseWriter, r *http.Request, name, pass string, deny unauthorized) (u meta.User, token string, ok bool) {
	const op = "server.auth"
	ip := clientIP(r)
	if u, ok := s.d.AuthenticateCached(r.Context(), name, pass); ok && s.logins.admitVerified(name, ip) {
		return u, "", true
	}
	// A live token is no guess, like a remembered password: admitted unless
	// the pair is locked out. One that is not (revoked, another user's, made
	// up) goes on below as a password and counts as a failed login when it
	// is none, so guessing tokens is throttled as guessing passwords is.
	if u, tok, ok := s.d.AuthenticateToken(r.Context(), name, pass); ok && s.logins.admitVerified(name, ip) {
		return u, tok, true
	}
	// Whether the name exists decides what a locked address may still try
	// (throttle.go); the answers do not tell it apart.
	known := true
	if _, err := s.d.User(r.Context(), name); errs.Is(err, errs.NotFound) {
		known = false
	} else if err != nil {
		s.log.Error("auth", "err", err)
		deny(w, r, errs.Errorf(op, errs.Unavailable, "authentication unavailable"))
		return meta.User{}, "", false
	}
	throttled := func(wait time.Duration) {
		secs := int64((max(wait, time.Second) + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		s.metrics.loginFailed("throttled")
		s.log.Info("auth throttled", "user", name, "addr", ip, "retry_after_s", secs)
		deny(w, r, errs.Errorf(op, errs.Throttled, "too many failed logins: retry later"))
	}
	var addrLocked bool
	for {
		wait, ok, locked, turn := s.logins.admitQueued(name, ip, known)
		if ok {
			addrLocked = locked
			break
		}
		if turn == nil {
			throttled(wait)
			return meta.User{}, "", false
		}
		// Held back only by attempts being evaluated (a client's first
		// connections opened at once): wait for one to end. If it verified
		// this very password, the remembered password lets this one in.
		select {
		case <-turn:
		case <-r.Context().Done():
			return meta.User{}, "", false // the client went away while waiting
		}
		if u, ok := s.d.AuthenticateCached(r.Context(), name, pass); ok && s.logins.admitVerified(name, ip) {
			return u, "", true
		}
	}
	u, err := s.d.Authenticate(r.Context(), name, pass)
	switch {
	case err == nil:
		s.logins.done(name, ip, true, true)
		return u, "", true
	case errs.Is(err, errs.Unauthenticated):
		s.logins.done(name, ip, true, false)
		// One line with the name and the client's address (the proxy's
		// forwarded one when trusted), for fail2ban-style tools.
		s.metrics.loginFailed("password")
		s.log.Info("auth failed", "user", name, "addr", ip)
		if addrLocked {
			// As the refusals of unknown names from this address are.
			throttled(s.logins.retryAfter(name, ip, known))
			return meta.User{}, "", false
		}
		deny(w, r, err)
	case errs.Is(err, errs.Canceled):
		s.logins.done(name, ip, false, false) // the client went away while we checked
	default:
		s.logins.done(name, ip, false, false)
		s.log.Error("auth", "err", err)
		// The cause (a database error) stays in the log.
		deny(w, r, errs.Errorf(op, errs.Unavailable, "authentication unavailable"))
	}
	return meta.User{}, "", false
}

// verifyPassword checks the current password a password change gives, as a
// sign-in under the throttle: a wrong one is a failed login of the user
// from this address (403, not 401: the request itself is signed in), and a
// locked-out pair gets 429 without the password being checked. An app
// token is not the password.
func (s *Server) verifyPassword(w http.ResponseWriter, r *http.Request, name, password string) bool {
	wrong := errs.Errorf("server.auth", errs.Permission, "the current password is wrong")
	_, token, ok := s.login(w, r, name, password, func(w http.ResponseWriter, r *http.Request, err error) {
		if errs.Is(err, errs.Unauthenticated) {
			err = wrong
		}
		s.apiUnauthorized(w, r, err)
	})
	if ok && token != "" {
		s.apiUnauthorized(w, r, wrong)
		return false
	}
	return ok
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// routeLabel is a request's surface, a fixed set (never the path: label
// cardinality stays bounded): dav, api, web (the page and its files),
// metrics, healthz, other.
func routeLabel(p string) string {
	switch {
	case p == "/dav" || strings.HasPrefix(p, "/dav/"):
		return "dav"
	case strings.HasPrefix(p, "/remote.php/"):
		return "dav"
	case strings.HasPrefix(p, "/api/"):
		return "api"
	case p == "/metrics":
		return "metrics"
	case p == "/healthz":
		return "healthz"
	case p == "/" || strings.HasPrefix(p, "/web/") || strings.HasPrefix(p, "/static/"):
		return "web"
	}
	return "other"
}
