package daemon

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/acme"

	"netdisk/async"
	"netdisk/davlock"
	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/crashpoint"
	"netdisk/internal/pprofserve"
	"netdisk/internal/redishealth"
	"netdisk/internal/tick"
	"netdisk/internal/tlsconf"
	"netdisk/lock"
	"netdisk/meta"
	"netdisk/preview"
	"netdisk/quota"
	"netdisk/server"
	"netdisk/thumb"
	"netdisk/upload"
)

// Options configure the daemon (`netdisk serve`).
type Options struct {
	DataDir    string
	Listen     string
	ChunkSize  int64
	GCInterval time.Duration // 0 disables scheduled GC
	ReadyFile  string        // if set, the bound address is written here once listening
	AdminPass  string        // password for the first admin; random when empty
	Logger     *slog.Logger
	Out        io.Writer // where the one-time admin password is printed
	Now        func() time.Time
	SessionTTL time.Duration // idle upload sessions expire after it; 0 means upload.DefaultTTL
	// TrashRetention, HistoryShare: the history's bounds (drive.Config);
	// 0 means the drive's defaults. HistoryInterval is how often they are
	// applied; 0 means DefaultHistoryInterval.
	TrashRetention  time.Duration
	HistoryShare    float64
	HistoryInterval time.Duration
	// Redis is the URL of the Redis server holding the quota ledger; empty
	// means the embedded ledger (one daemon per data directory).
	Redis string
	// Meta is a shared metadata store's URL (postgres://…); empty means
	// SQLite in DataDir. A shared store needs Redis: Open refuses without.
	Meta string
	// Blobs is a shared chunk store's URL (s3://BUCKET[/PREFIX]?…); empty
	// means the chunk directory in DataDir. CacheDir and CacheSize bound the
	// node's local read cache of its chunks (scaleout.go).
	Blobs     string
	CacheDir  string
	CacheSize int64
	// LeaseTTL is how long a run-once job's lease outlives a node that
	// died holding it; 0 means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// Pprof, when set, serves net/http/pprof on this address (a listener of
	// its own, never the public one; for profiling, off by default).
	Pprof string
	// MetricsListen, when set, serves /metrics without authentication on
	// this address (for Prometheus; keep it on loopback or a private
	// network). The public listener's /metrics always needs an admin.
	MetricsListen string
	// MaxFileSize bounds every file (413 beyond it); 0 means
	// drive.DefaultMaxFileSize.
	MaxFileSize int64
	// DiskReserve is the space kept allocated in DataDir for deletions on
	// a full disk (drive.LocalConfig.DiskReserve); 0 means
	// drive.DefaultDiskReserve.
	DiskReserve int64
	// SingleNodePull refuses a lock held by another node instead of
	// queueing the caller (--multi-node-pull=false).
	SingleNodePull bool
	// LockLease is how long a lock holder holds without a heartbeat (and a
	// granted waiter has to claim); 0 means lock.DefaultLease.
	LockLease time.Duration
	// LockMaxQueue and LockMaxUserWait bound the waiters per lock and the
	// queue slots of one user (429 beyond); 0 means the lock package's
	// defaults.
	LockMaxQueue, LockMaxUserWait int
	// LockStreamRecheck is how often lock event streams re-read their
	// keys' standing (catching events lost with a Redis restart); 0 means
	// api.DefaultLockStreamRecheck.
	LockStreamRecheck time.Duration
	// Instant says when content only other users hold is an instant upload
	// (upload.Instant; the zero value is private with owners 2-10).
	Instant upload.Instant
	// AsyncWindow and AsyncTick are the async downloads' collection window
	// (whole seconds) and scheduler period; 0 means the async package's
	// defaults (15 s, 5 s). AsyncTimeout ends a running job (0: 10 min).
	AsyncWindow, AsyncTick, AsyncTimeout time.Duration
	// AsyncRecheck is how often an agent's work stream re-reads its work;
	// 0 means api.DefaultAsyncRecheck.
	AsyncRecheck time.Duration
	// Conns bound the public listener's connections (server/connlimit.go); zero
	// fields take server.DefaultConnLimits.
	Conns server.ConnLimits
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// X-Forwarded-Proto are believed (server.Config.TrustedProxies).
	TrustedProxies []netip.Prefix
	// Thumbs bound the thumbnails' making (zero fields: thumb's defaults,
	// 40 MP, 64 MiB files, 256 MiB of pixels decoding at once);
	// ThumbCacheSize bounds the node's thumbnail folder, DataDir/thumbs
	// (0: preview.DefaultMaxBytes).
	Thumbs         thumb.Limits
	ThumbCacheSize int64
	// Versions bounds the files' versions kept (--versions-retention,
	// --versions-max); thinning applies whatever it says.
	Versions drive.VersionPolicy
	// VersionsInterval is how often versions are thinned and expired; 0
	// means DefaultVersionsInterval.
	VersionsInterval time.Duration
	// TLSCert and TLSKey, both set, make Listen serve HTTPS only with this
	// pair, re-read when the files change (polled every TLSPoll, 0 means
	// DefaultTLSPoll) and at each receive on TLSReload (serve feeds it
	// SIGHUP; with ACME a receive is a renewal check at once).
	// TLSSelfSigned instead serves the data directory's self-signed pair,
	// generated on first use.
	TLSCert, TLSKey string
	TLSSelfSigned   bool
	TLSPoll         time.Duration
	TLSReload       <-chan os.Signal
	// HTTPRedirectListen, with TLS on, serves plain HTTP on this address
	// that redirects every request to HTTPS (308).
	HTTPRedirectListen string
	// ACMEDomains, when set, make Listen serve HTTPS only with
	// certificates for these names obtained and renewed from the ACME CA
	// at ACMECA (empty: Let's Encrypt), trusting ACMECARoot's certificates
	// too when set, with ACMEEmail as the account's contact (acme.go).
	// The CA's TLS-ALPN-01 challenges are answered on Listen; HTTP-01 on
	// ACMEHTTPListen and HTTPRedirectListen, either set. ACMECheck is how
	// often the certificates are checked for renewal on Now's clock; 0
	// means DefaultACMECheck.
	ACMEDomains       []string
	ACMEEmail, ACMECA string
	ACMECARoot        string
	ACMEHTTPListen    string
	ACMECheck         time.Duration
}

// DefaultVersionsInterval is how often the versions loop runs by default:
// often enough that the finest step of the schedule (10 s within the last
// minute) is applied to most bursts of saves, cheap since it reads only the
// files that have versions.
const DefaultVersionsInterval = time.Minute

// DefaultTLSPoll is how often the certificate files are checked for a
// renewal: certificates are renewed weeks before they expire, so a minute
// costs nothing and two stats a minute are free.
const DefaultTLSPoll = time.Minute

// Daemon is an opened data directory with everything wired.
type Daemon struct {
	Drive  *drive.Drive
	Meta   *meta.SQLStore
	Upload *upload.Service
	Server *server.Server
	Quota  *quota.Guard
	Locks  *lock.Manager
	Async  *async.Service
	local  *drive.Local
	cache  io.Closer // the S3 read cache, nil without one
	rdb    *redis.Client
	watch  *redishealth.Watch // rdb's, nil without Redis
	opts   Options
	node   string // this process's name among the nodes (pins, leases)

	// Previews makes the thumbnails, kept in DataDir/thumbs: every node
	// keeps its own (a thumbnail is derived and cheap to make again).
	Previews *preview.Service

	// The background loops (GC, upload janitor, checksums, quota ledger)
	// use the stores: Serve's end and Close stop them and wait for every
	// one to return before the stores close.
	mu          sync.Mutex
	closed      bool
	leasesTaken sync.Map // run-once jobs this process has held the lease of (lease.go)
	stopBG      []context.CancelFunc
	bg          sync.WaitGroup
	onEvent     func(event string) // tests only: "start NAME", "exit NAME", "close"
	onACME      func(*acmeCerts)   // tests only: the ACME certificates once configured
	acme        *acmeCerts         // --acme-domain's certificates, nil without
}

func (d *Daemon) event(e string) {
	if d.onEvent != nil {
		d.onEvent(e)
	}
}

// startBackground starts the background loops on a context derived from ctx.
func (d *Daemon) startBackground(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("daemon closed")
	}
	bg, cancel := context.WithCancel(ctx)
	d.stopBG = append(d.stopBG, cancel)
	var clock quota.Clock
	if d.opts.Now != nil {
		clock = clockFunc(d.opts.Now)
	}
	type job struct {
		name string
		run  func(context.Context)
	}
	jobs := []job{
		{"upload-janitor", func(ctx context.Context) { d.Upload.Run(ctx, min(d.Upload.TTL()/10, time.Minute)) }},
		{"checksums", func(ctx context.Context) { d.Drive.RunChecksums(ctx, time.Minute, nil) }},
		{"lock-leases", func(ctx context.Context) { d.Locks.Run(ctx, 0) }},
		{"async-scheduler", func(ctx context.Context) { d.Async.Run(ctx) }},
		{"web-sessions", d.pruneWebSessions},
		{"versions", d.versionsLoop},
		{"history", d.historyLoop},
		// On every node: the parts are in its own data directory.
	}
	if d.acme != nil {
		jobs = append(jobs, job{"acme", func(ctx context.Context) { d.acme.run(ctx, d.opts.ACMECheck, d.opts.TLSReload) }})
	}
	if d.opts.GCInterval > 0 {
		jobs = append(jobs, job{"gc", func(ctx context.Context) { d.gcLoop(ctx, d.opts.GCInterval) }})
	}
	if d.opts.Meta == "" {
		jobs = append(jobs, job{"quota", func(ctx context.Context) { d.Quota.Run(ctx, clock, time.Second) }})
	} else {
		// Nodes share the store: the jobs that must run once run under a
		// lease (lease.go): GC, upload session expiry, the history's
		// retention and share, and the quota ledger's flushes into the
		// database (quota.Guard.Run says why
		// its repair half stays on every node).
		//
		// On every node, by design:
		//   - quota: each node repairs the ledger from its own knowledge
		//     (its failed updates, its open holds) and notices a lost
		//     ledger at once rather than a lease later;
		//   - lock-leases: expiring is idempotent, and each node's waiters
		//     must not wait on another node's loop to move on;
		//   - async-scheduler: every job is stepped under its own lock in
		//     the shared lock service (async.Service.step), a lease held by
		//     the one node running it and passed on when that node dies, so
		//     jobs already run once, spread over the nodes;
		//   - acme: every node loads the certificates it serves, and the
		//     lock acme:<domain> already makes one node order (acme.go);
		//   - checksums: a node's writes kick its own pass at once, and
		//     recording a checksum twice is harmless (SetChecksums records
		//     only for the version it was computed on).
		jobs = append(jobs,
			job{"quota", func(ctx context.Context) { d.Quota.RunHeal(ctx, time.Second) }},
			job{"quota-flush", func(ctx context.Context) { d.Quota.RunFlush(ctx, clock, time.Second) }})
		ttl := d.opts.LeaseTTL
		if ttl <= 0 {
			ttl = DefaultLeaseTTL
		}
		l := lease{rdb: d.rdb, node: d.node, ttl: ttl, log: d.opts.Logger, taken: &d.leasesTaken}
		for i, j := range jobs {
			switch j.name {
			case "gc", "upload-janitor", "quota-flush", "web-sessions", "versions", "history":
				run := j.run
				jobs[i].run = func(ctx context.Context) { l.run(ctx, j.name, run) }
			}
		}
	}
	for _, j := range jobs {
		d.bg.Add(1)
		go func() {
			defer d.bg.Done()
			d.event("start " + j.name)
			j.run(bg)
			d.event("exit " + j.name)
		}()
	}
	return nil
}

// stopBackground cancels the background loops and waits until all returned.
func (d *Daemon) stopBackground() {
	d.mu.Lock()
	for _, cancel := range d.stopBG {
		cancel()
	}
	d.stopBG = nil
	d.mu.Unlock()
	d.bg.Wait()
}

// clockFunc adapts Options.Now to quota.Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// redisLedger connects to the Redis at url with short timeouts (a Redis that
// does not answer makes uploads fail with 503 within a second or two) and
// returns the ledger constructor for drive.OpenLocal. An empty url means the
// embedded ledger (nil, nil, nil).
func redisLedger(url string) (func(quota.Config) quota.Ledger, *redis.Client, error) {
	if url == "" {
		return nil, nil, nil
	}
	ro, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("--redis: %w", err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = time.Second, time.Second, time.Second
	ro.MaxRetries = 1
	rdb := redis.NewClient(ro)
	return func(cfg quota.Config) quota.Ledger { return quota.NewRedis(rdb, "", cfg) }, rdb, nil
}

// Open opens (creating on first start) the data directory and wires the layers.
func Open(ctx context.Context, o Options) (*Daemon, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if err := o.Instant.Check(); err != nil {
		return nil, err
	}
	if err := checkShared(o); err != nil {
		return nil, err
	}
	blobs, err := openBlobs(ctx, o)
	if err != nil {
		return nil, err
	}
	// Every resource opened is closed again when a later step fails.
	cache, _ := blobs.(io.Closer)
	closeCache := func() {
		if cache != nil {
			cache.Close()
		}
	}
	ledger, rdb, err := redisLedger(o.Redis)
	if err != nil {
		closeCache()
		return nil, err
	}
	var watch *redishealth.Watch
	if rdb != nil {
		// One line when Redis goes and one when it is back, whatever
		// uses it (the users log their own failures as detail), and
		// go-redis's own lines through slog. A Redis unreachable at start
		// does not stop the daemon: it serves, answering 503 what needs
		// Redis, until Redis answers (a Redis that starts after the
		// daemon, or restarts, is an outage like any other).
		watch = redishealth.New(rdb.Options().Addr, o.Logger, o.Now)
		watch.Attach(rdb)
		watch.Check(ctx, rdb)
	}
	node := nodeName()
	dc := drive.Config{ChunkSize: o.ChunkSize, Now: o.Now, Logger: o.Logger, MaxFileSize: o.MaxFileSize,
		TrashRetention: o.TrashRetention, HistoryShare: o.HistoryShare}
	if o.Meta != "" {
		// Nodes sharing the metadata share the WebDAV locks, in Redis
		// (checkShared made sure there is one): a lock taken through one
		// node binds writes through every node. One node keeps them in
		// process, Redis or not.
		dc.Locks = davlock.NewRedis(rdb, "", o.Now, o.Logger)
		// And the pins that keep another node's GC off the chunks this
		// node stored and has not committed yet.
		dc.Pins = dedup.NewSharedPins(rdb, node, o.Logger)
	}
	l, err := drive.OpenLocal(ctx, drive.LocalConfig{Dir: o.DataDir, Ledger: ledger, MetaURL: o.Meta, BlobStore: blobs, Config: dc, DiskReserve: o.DiskReserve})
	if err != nil {
		closeCache()
		closeRedis(rdb)
		return nil, err
	}
	fail := func(err error) (*Daemon, error) {
		closeCache()
		l.Close()
		closeRedis(rdb)
		return nil, err
	}
	d, m, g := l.Drive, l.Meta, l.Quota
	if err := ensureAdmin(ctx, d, m, o); err != nil {
		return fail(err)
	}
	up := upload.New(upload.Config{Drive: d, DB: m, TTL: o.SessionTTL, Logger: o.Logger, Instant: o.Instant})
	// SQLite is the truth: the ledger is rebuilt from it at every start, so a
	// kill -9 (a session ended in SQLite but not in the ledger) leaves
	// nothing behind; the hold of a write that died with the process goes
	// once its lease expires, while other nodes' live holds are kept
	// (quota.Guard).
	if err := l.Reconcile(ctx, d); err != nil {
		if rdb == nil {
			return fail(fmt.Errorf("quota: %w", err))
		}
		// Redis not reachable yet (the Redis watch said so): uploads
		// answer 503 until Run reconciles.
		o.Logger.Debug("quota: cannot reconcile the Redis ledger now", "err", err)
	}
	// With Redis the locks live there too, so daemons sharing it share
	// the queues; without, in process.
	lc := lock.Config{Lease: o.LockLease, SingleNode: o.SingleNodePull, Now: o.Now, Log: o.Logger,
		MaxQueue: o.LockMaxQueue, MaxUserWait: o.LockMaxUserWait}
	if rdb != nil {
		lc.State = lock.NewRedis(rdb, "")
	}
	locks, err := lock.NewManager(ctx, lc)
	if err != nil {
		return fail(fmt.Errorf("locks: %w", err))
	}
	if c, ok := blobs.(*dedup.Cache); ok && rdb != nil {
		// Processes sharing --cache-dir (and this Redis) fetch each chunk
		// once: misses take its pull lock (scaleout.go). In process, the
		// cache's own singleflight already does.
		c.SetPuller(lock.Puller{M: locks, Scope: cachePullScope, Node: lock.Node{User: cachePullUser, ID: node}})
	}
	// Async jobs live beside the locks: in SQLite alone, in Redis shared
	// (nodes sharing the metadata always have Redis: checkShared), so the
	// embedded store is only ever the one node's own SQLite.
	var store async.Store
	if rdb != nil {
		store = async.NewRedis(rdb, 0)
	} else {
		store = async.NewEmbedded(m, 0)
	}
	as, err := async.New(ctx, async.Config{Store: store, Files: d, Locks: locks, Node: node,
		Window: o.AsyncWindow, Tick: o.AsyncTick, Timeout: o.AsyncTimeout, Now: o.Now, Log: o.Logger})
	if err != nil {
		closeCache() // its fetches take the pull locks
		cache = nil
		locks.Close()
		return fail(fmt.Errorf("async: %w", err))
	}
	// A deleted user's async downloads end with the account.
	d.OnUserDeleted(as.PurgeOwner)
	pv, err := preview.Open(preview.Config{Drive: d, Dir: filepath.Join(o.DataDir, "thumbs"), MaxBytes: o.ThumbCacheSize,
		Limits: o.Thumbs, Now: o.Now, Log: o.Logger})
	if err != nil {
		as.Close()
		closeCache()
		cache = nil
		locks.Close()
		return fail(fmt.Errorf("thumbnails: %w", err))
	}
	sc := server.Config{Drive: d, Logger: o.Logger, Now: o.Now, Upload: up, Locks: locks, LockStreamRecheck: o.LockStreamRecheck,
		Async: as, AsyncRecheck: o.AsyncRecheck, TrustedProxies: o.TrustedProxies, Previews: pv}
	if o.Meta != "" {
		sc.SharedLogins = rdb // nodes sharing the users share their login throttle
	}
	srv := server.New(sc)
	if c, ok := blobs.(*dedup.Cache); ok {
		srv.Metrics().Registry().MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "netdisk_chunk_cache_fetches_total",
			Help: "Chunks the read cache fetched from the shared chunk store (misses this node fetched itself).",
		}, func() float64 { return float64(c.Fetches()) }))
	}
	dm := &Daemon{Drive: d, Meta: m, Upload: up, Server: srv, Quota: g, Locks: locks, Async: as, Previews: pv, local: l, cache: cache, rdb: rdb, watch: watch, opts: o, node: node}
	dm.registerMetrics(srv.Metrics().Registry())
	return dm, nil
}

func closeRedis(rdb *redis.Client) {
	if rdb != nil {
		rdb.Close()
	}
}

// ensureAdmin creates the user "admin" when there are no users at all.
func ensureAdmin(ctx context.Context, d *drive.Drive, m meta.Users, o Options) error {
	users, err := m.ListUsers(ctx)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		if o.AdminPass != "" {
			// Said, not silently ignored: someone who set it expects to
			// sign in with it, and would otherwise only see a 401.
			o.Logger.Warn("NETDISK_ADMIN_PASSWORD ignored: it sets the first admin's password on an empty data directory, and this one has users; change a password with `netdisk admin user passwd NAME`", "users", len(users))
		}
		return nil
	}
	pass, printed := o.AdminPass, false
	if pass == "" {
		b := make([]byte, 15)
		rand.Read(b)
		pass, printed = base64.RawURLEncoding.EncodeToString(b), true
	}
	if _, err := d.AddUser(ctx, "admin", pass, true, 0); err != nil && !errs.Is(err, errs.Exists) {
		return fmt.Errorf("create admin: %w", err)
	}
	if printed {
		fmt.Fprintf(o.Out, "Created user \"admin\" with password: %s\n(shown once; change it with `netdisk admin user passwd admin`)\n", pass)
	}
	o.Logger.Info("created admin user", "name", "admin")
	return nil
}

// Close stops the background loops (even while Serve is still shutting
// down), waits for them, then releases the stores.
func (d *Daemon) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.stopBackground()
	d.event("close")
	d.Async.Close()
	d.Previews.Close()
	if d.cache != nil {
		d.cache.Close() // its fetches take pull locks: before the lock service
	}
	d.Locks.Close()
	if d.rdb != nil {
		d.watch.Detach()
		d.rdb.Close()
	}
	return d.local.Close()
}

// Serve listens on Options.Listen and serves until ctx is cancelled (see
// ServeListener).
func (d *Daemon) Serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", d.opts.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return d.ServeListener(ctx, ln)
}

// ServeListener serves on ln until ctx is cancelled, then shuts down
// gracefully: in-flight requests get a grace period; staged uploads that do
// not finish are abandoned, never half-committed. The background loops run
// while it serves. In-process callers (benchmarks, tests) pass their own
// loopback listener and know the address without a ready file. ln is closed
// when it returns.
func (d *Daemon) ServeListener(ctx context.Context, ln net.Listener) error {
	log := d.opts.Logger
	addr := ln.Addr().String()
	pub := d.Server.Listen(ln, d.opts.Conns)
	scheme := "http"
	var challenges func(http.Handler) http.Handler // ACME's HTTP-01 answers, before the redirect
	switch {
	case d.opts.TLSCert != "" || d.opts.TLSSelfSigned:
		certs, err := d.tlsCertificates(ln)
		if err != nil {
			pub.Close()
			return err
		}
		pub.TLS = tlsconf.Server(certs.GetCertificate)
		scheme = "https"
		go d.watchCertificates(ctx, certs)
	case len(d.opts.ACMEDomains) > 0:
		certs, err := d.newACME()
		if err != nil {
			pub.Close()
			return err
		}
		pub.TLS = tlsconf.Server(certs.GetCertificate)
		// The CA's TLS-ALPN-01 probe offers only this protocol: a server
		// that does not list it refuses the handshake.
		pub.TLS.NextProtos = append(pub.TLS.NextProtos, acme.ALPNProto)
		scheme = "https"
		challenges = certs.HTTPHandler
		// Obtained and renewed by the "acme" background loop, started
		// below, once the listener answers the CA's challenges.
		d.acme = certs
		if d.onACME != nil {
			d.onACME(certs)
		}
	}
	if scheme == "https" {
		_, port, _ := net.SplitHostPort(addr)
		for _, l := range []struct{ flag, addr string }{
			{"--http-redirect-listen", d.opts.HTTPRedirectListen}, {"--acme-http-listen", d.opts.ACMEHTTPListen}} {
			if l.addr == "" {
				continue
			}
			h := server.RedirectHTTPS(port)
			if challenges != nil {
				h = challenges(h)
			}
			stop, err := serveRedirect(l.flag, l.addr, h, log)
			if err != nil {
				pub.Close()
				return err
			}
			defer stop()
		}
	}
	log.Info("listening", "addr", addr, "data", d.opts.DataDir, "dav", scheme+"://"+addr+"/dav/",
		"fd_limit", pub.FDLimit, "max_conns", pub.Limits.Max, "max_conns_per_addr", pub.Limits.PerAddr)
	if d.opts.MetricsListen != "" {
		// Before the ready file: once it exists, everything listens.
		stopMetrics, err := serveMetrics(d.opts.MetricsListen, d.Server.MetricsHandler(), log)
		if err != nil {
			pub.Close()
			return err
		}
		defer stopMetrics()
	}
	if d.opts.ReadyFile != "" {
		if err := os.WriteFile(d.opts.ReadyFile, []byte(addr), 0o600); err != nil {
			pub.Close()
			return err
		}
	}
	crashpoint.Arm() // a crash test's count starts once the daemon serves
	if err := d.startBackground(ctx); err != nil {
		pub.Close()
		return err
	}
	// Runs after the HTTP server stopped (below): no request and no loop
	// uses the stores once Serve returned.
	defer d.stopBackground()
	if d.opts.Pprof != "" {
		ps, err := pprofserve.Start(ctx, d.opts.Pprof, log)
		if err != nil {
			pub.Close()
			return err
		}
		defer ps.Close()
	}
	return pub.Serve(ctx)
}

// pruneWebSessions ends the web sessions past their expiry that nobody came
// back with (a lookup ends the others), one statement every few minutes
// rather than a sweep at each sign-in.
func (d *Daemon) pruneWebSessions(ctx context.Context) {
	tick.Every(ctx, 5*time.Minute, func(ctx context.Context) {
		if n, err := d.Server.Web().Sessions().Prune(ctx); err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("web sessions: pruning expired sessions", "err", err)
		} else if n > 0 {
			d.opts.Logger.Debug("web sessions: expired sessions ended", "count", n)
		}
	})
}

// versionsLoop thins and expires the files' versions (drive.ExpireVersions);
// the chunks they free are the next GC's.
func (d *Daemon) versionsLoop(ctx context.Context) {
	every := d.opts.VersionsInterval
	if every <= 0 {
		every = DefaultVersionsInterval
	}
	tick.Every(ctx, every, func(ctx context.Context) {
		if n, err := d.Drive.ExpireVersions(ctx, d.opts.Versions); err != nil && ctx.Err() == nil {
			d.opts.Logger.Warn("versions: expiring", "err", err)
		} else if n > 0 {
			d.opts.Logger.Debug("versions: expunged", "count", n)
		}
	})
}

// DefaultHistoryInterval is how often the history's bounds are applied.
const DefaultHistoryInterval = 10 * time.Minute

// historyLoop expunges the trash past its retention and the history past
// its share (drive.ExpireHistory), on one node at a time.
func (d *Daemon) historyLoop(ctx context.Context) {
	every := d.opts.HistoryInterval
	if every <= 0 {
		every = DefaultHistoryInterval
	}
	tick.Every(ctx, every, func(ctx context.Context) {
		if _, err := d.Drive.ExpireHistory(ctx); err != nil && ctx.Err() == nil {
			d.opts.Logger.Error("history: expunging past retention and share", "err", err)
		}
	})
}

func (d *Daemon) gcLoop(ctx context.Context, every time.Duration) {
	tick.Every(ctx, every, func(ctx context.Context) {
		if _, err := d.Drive.GC(ctx); err != nil && ctx.Err() == nil {
			d.opts.Logger.Error("scheduled gc", "err", err)
		}
	})
}
