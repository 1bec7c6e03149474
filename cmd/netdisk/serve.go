package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/crypto/acme/autocert"

	"netdisk/api"
	"netdisk/async"
	"netdisk/daemon"
	"netdisk/lock"
	"netdisk/quota"
	"netdisk/server"
	"netdisk/thumb"
	"netdisk/upload"
)

// softMemoryLimit is the daemon's default GOMEMLIMIT (override with the
// environment variable).
const softMemoryLimit = 64 << 20

func newServeCmd() *cobra.Command {
	var (
		o           daemon.Options
		chunkSize   string
		maxFile     string
		diskReserve string
		logLevel    string
		logJSON     bool
		multiNode   bool
		cacheSize   string
		instant     string
		owners      string
		trusted     string
		thumbMP     float64
		thumbInput  string
		thumbMemory string
		thumbCache  string
		retention   string
		acmeDomains string
		share       string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon (WebDAV at /dav/, API at /api/v1/)",
		Long: `Run the netdisk daemon with embedded defaults: a SQLite database and a
chunk directory under --data, no other service needed.

On first start with an empty data directory it creates the user "admin", with
the password from NETDISK_ADMIN_PASSWORD or a random one printed once. Once
the data directory has users the variable is ignored (the log says so):
change a password with 'netdisk admin user passwd NAME'.

With --redis, a Redis that does not answer at start does not stop the daemon:
it logs so in one line and serves, answering 503 to what needs Redis (uploads,
PUTs and copies, locks, async downloads) until Redis is back; an outage later
is logged the same way, one line when Redis goes and one when it is back.

Plain HTTP by default, for loopback. --tls-cert/--tls-key or --tls-self-signed
make --listen HTTPS only (TLS 1.2+, HTTP/2; plain HTTP there is refused), with
HSTS and Secure cookies; the certificate is re-read on SIGHUP and when its
files change. Clients verify with the system's CAs, --ca-file or
--tls-fingerprint ('netdisk admin tls' prints the self-signed one's).

--acme-domain instead obtains the certificate from Let's Encrypt (or the ACME
CA of --acme-ca) and renews it 30 days (a third of its lifetime, if less)
before it expires: the names must
resolve to this host, and the CA must reach --listen on port 443 (TLS-ALPN-01)
or --acme-http-listen / --http-redirect-listen on port 80 (HTTP-01). The
certificates are kept in --data/acme, or, with --meta, in the shared metadata
store: one node orders, the others serve what it obtained.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("GOMEMLIMIT") == "" {
				// Chunk buffers are large and short-lived: without a soft limit
				// the GC lets the heap grow to twice what uploads left behind.
				// The limit only makes it collect sooner; it never refuses memory.
				debug.SetMemoryLimit(softMemoryLimit)
			}
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			hopts := &slog.HandlerOptions{Level: lvl}
			var h slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
			if logJSON {
				h = slog.NewJSONHandler(os.Stderr, hopts)
			}
			o.Logger = slog.New(h)
			cs, err := humanize.ParseBytes(chunkSize)
			if err != nil || cs < 64<<10 || cs > 64<<20 {
				return fmt.Errorf("--chunk-size %q: want a size between 64KiB and 64MiB", chunkSize)
			}
			if cs%(4<<10) != 0 {
				// Seed 004: chunks that are whole 4 KiB disk blocks are written
				// and reassembled in whole blocks. The size is also part of
				// content identity, so a bad one is refused, not rounded.
				return fmt.Errorf("--chunk-size %q (%d bytes): want a multiple of 4KiB", chunkSize, cs)
			}
			o.ChunkSize = int64(cs)
			mf, err := humanize.ParseBytes(maxFile)
			if err != nil || mf == 0 || mf > quota.MaxBytes {
				return fmt.Errorf("--max-file-size %q: want a size between 1 byte and 8PiB", maxFile)
			}
			o.MaxFileSize = int64(mf)
			dr, err := humanize.ParseBytes(diskReserve)
			if err != nil || dr < 1<<20 || dr > 1<<40 {
				return fmt.Errorf("--disk-reserve %q: want a size between 1MiB and 1TiB", diskReserve)
			}
			o.DiskReserve = int64(dr)
			o.SingleNodePull = !multiNode
			cz, err := humanize.ParseBytes(cacheSize)
			if err != nil {
				return fmt.Errorf("--cache-size %q: %w", cacheSize, err)
			}
			o.CacheSize = int64(cz)
			if o.Blobs != "" && o.CacheDir == "" {
				o.CacheDir = filepath.Join(o.DataDir, "cache")
			}
			if o.LockLease < 100*time.Millisecond {
				return fmt.Errorf("--lock-lease %v: want at least 100ms", o.LockLease)
			}
			if o.Instant.Mode, err = upload.ParseInstantMode(instant); err != nil {
				return fmt.Errorf("--instant-upload: %w", err)
			}
			if o.Instant.MinOwners, o.Instant.MaxOwners, err = upload.ParseOwnerRange(owners); err != nil {
				return fmt.Errorf("--instant-upload-owners: %w", err)
			}
			if o.Conns.Max < 0 || o.Conns.PerAddr <= 0 || o.Conns.PreAuthTimeout <= 0 {
				return fmt.Errorf("--max-conns must be 0 or more, --max-conns-per-addr and --preauth-timeout positive")
			}
			if o.AsyncWindow < time.Second || o.AsyncWindow%time.Second != 0 {
				return fmt.Errorf("--async-window %v: want whole seconds, at least 1s", o.AsyncWindow)
			}
			if o.AsyncTick <= 0 || o.AsyncTimeout <= 0 {
				return fmt.Errorf("--async-tick and --async-timeout must be positive")
			}
			if o.AsyncTick >= o.LockLease {
				// The scheduler renews its jobs' locks once a tick: a longer
				// tick lets the lock lapse and another daemon take the job.
				// The default tick follows a short lease; a tick given
				// explicitly is refused.
				if cmd.Flags().Changed("async-tick") {
					return fmt.Errorf("--async-tick %v: want less than --lock-lease %v", o.AsyncTick, o.LockLease)
				}
				o.AsyncTick = o.LockLease / 3
			}
			if err := thumbFlags(&o, thumbMP, thumbInput, thumbMemory, thumbCache); err != nil {
				return err
			}
			if (o.TLSCert == "") != (o.TLSKey == "") {
				return fmt.Errorf("--tls-cert and --tls-key go together")
			}
			if o.TLSSelfSigned && o.TLSCert != "" {
				return fmt.Errorf("--tls-self-signed or --tls-cert/--tls-key, not both")
			}
			if o.TLSPoll <= 0 {
				return fmt.Errorf("--tls-poll %v: want a positive duration", o.TLSPoll)
			}
			if acmeDomains != "" {
				if o.TLSCert != "" || o.TLSSelfSigned {
					return fmt.Errorf("--acme-domain or --tls-cert/--tls-key or --tls-self-signed, one of them")
				}
				if o.ACMEDomains, err = parseDomains(acmeDomains); err != nil {
					return err
				}
			} else if o.ACMEEmail != "" || cmd.Flags().Changed("acme-ca") || o.ACMECARoot != "" || o.ACMEHTTPListen != "" {
				return fmt.Errorf("--acme-email, --acme-ca, --acme-ca-root and --acme-http-listen need --acme-domain")
			}
			if o.ACMECheck <= 0 {
				return fmt.Errorf("--acme-check %v: want a positive duration", o.ACMECheck)
			}
			if o.HTTPRedirectListen != "" && o.TLSCert == "" && !o.TLSSelfSigned && acmeDomains == "" {
				return fmt.Errorf("--http-redirect-listen needs TLS (--tls-cert/--tls-key, --tls-self-signed or --acme-domain)")
			}
			if o.TLSCert != "" || o.TLSSelfSigned || len(o.ACMEDomains) > 0 {
				// SIGHUP re-reads the certificate (certbot's deploy hook,
				// systemd's reload) or, with ACME, checks it for renewal at
				// once; without TLS it keeps its default.
				hup := make(chan os.Signal, 1)
				signal.Notify(hup, syscall.SIGHUP)
				defer signal.Stop(hup)
				o.TLSReload = hup
			}
			if o.TrashRetention, err = parseDays(retention); err != nil || o.TrashRetention <= 0 {
				return fmt.Errorf("--trash-retention %q: want a positive duration such as 30d or 12h", retention)
			}
			if o.HistoryShare, err = parsePercent(share); err != nil {
				return fmt.Errorf("--history-share %q: %w", share, err)
			}
			if o.HistoryInterval <= 0 {
				return fmt.Errorf("--history-interval must be positive")
			}
			if o.TrustedProxies, err = server.ParseTrustedProxies(trusted); err != nil {
				return fmt.Errorf("--trusted-proxies: %w", err)
			}
			// First in the log once the flags are accepted (a refused flag
			// stays a one-line answer), so every report of a problem says
			// which build it came from; /api/v1/info tells clients the same.
			v := readBuildVersion()
			api.Version = v.Version
			attrs := []any{"version", v.Version}
			if v.Revision != "" {
				attrs = append(attrs, "revision", v.Revision, "modified", v.Modified)
			}
			o.Logger.Info("netdisk starting", append(attrs, "go", v.Go)...)
			o.AdminPass = os.Getenv("NETDISK_ADMIN_PASSWORD")
			o.Out = cmd.OutOrStdout()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			d, err := daemon.Open(ctx, o)
			if err != nil {
				return err
			}
			defer d.Close()
			return d.Serve(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data", "./netdisk-data", "data directory (database and chunks)")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&chunkSize, "chunk-size", "4MiB", "chunk size for new data, a multiple of 4KiB (part of content identity: keep it fixed)")
	f.StringVar(&maxFile, "max-file-size", "1TiB", "largest file accepted (larger uploads are refused with 413)")
	f.StringVar(&diskReserve, "disk-reserve", "64MiB", "space kept allocated in --data (the file reserve) so deletions and GC run on a full disk; "+
		"below half of it free, writes are refused (507) and the reserve is released, until twice it is free again")
	f.DurationVar(&o.GCInterval, "gc-interval", time.Hour, "how often to collect unreferenced chunks (0 disables)")
	f.StringVar(&retention, "trash-retention", "30d", "deleted files and folders stay in their owner's trash this long (days as 30d, or 12h, 90m), then are deleted for good")
	f.StringVar(&share, "history-share", "50%", "most of a user's quota (of the volume for a user without one) their trash and file versions may use together; past it the oldest go first")
	f.DurationVar(&o.HistoryInterval, "history-interval", 10*time.Minute, "how often the trash retention and the history share are applied")
	_ = f.MarkHidden("history-interval")
	f.DurationVar(&o.SessionTTL, "session-ttl", 72*time.Hour, "upload sessions (and the sync clients' chunked uploads) idle this long expire and release their space")
	f.DurationVar(&o.Versions.MaxAge, "versions-retention", 0, "file versions older than this are expunged (0: no age bound); younger ones are thinned: one per 10s within the last minute, per minute for an hour, per hour for a day, per day for 30 days, per week after")
	f.IntVar(&o.Versions.Max, "versions-max", 0, "most versions kept per file, the newest (0: no count bound)")
	f.DurationVar(&o.VersionsInterval, "versions-interval", daemon.DefaultVersionsInterval, "how often versions are thinned and expired")
	_ = f.MarkHidden("versions-interval")
	f.StringVar(&instant, "instant-upload", "private", "when another user's content is an instant upload: private (once enough distinct users hold it that its existence is no secret; "+
		"until then the answer is the one for unknown content), shared (whenever anyone holds it: reveals what others store), off (never; a user's own content always is)")
	f.StringVar(&owners, "instant-upload-owners", "2-10", "private mode: each content's secret threshold of distinct owners is drawn once in this range MIN-MAX")
	f.StringVar(&o.Redis, "redis", "", "Redis URL for the quota ledger, the locks and the async jobs, e.g. redis://127.0.0.1:6379/0 (empty: embedded ledger, in-process locks); unreachable at start, the daemon serves and answers 503 what needs it until it answers")
	f.StringVar(&o.Meta, "meta", "", "shared metadata store, postgres://USER:PASS@HOST/DB (empty: SQLite in --data); needs --redis")
	f.StringVar(&o.Blobs, "blobs", "", "shared chunk store, s3://BUCKET[/PREFIX]?endpoint=HOST:PORT&region=R (empty: chunks in --data); credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile")
	f.StringVar(&o.CacheDir, "cache-dir", "", "local read cache of --blobs chunks (default: --data/cache)")
	f.StringVar(&cacheSize, "cache-size", "1GiB", "most bytes the --blobs read cache keeps")
	f.DurationVar(&o.LeaseTTL, "lease-ttl", daemon.DefaultLeaseTTL, "with --meta: a node running a run-once job (GC, upload session expiry) that stops renewing its lease for this long hands the job to another node")
	f.BoolVar(&multiNode, "multi-node-pull", true, "queue a node asking for a lock another node holds (false: refuse it)")
	f.IntVar(&o.LockMaxQueue, "lock-max-queue", lock.DefaultMaxQueue, "most nodes waiting for one lock (429 beyond)")
	f.IntVar(&o.LockMaxUserWait, "lock-max-user-wait", lock.DefaultMaxUserWait, "most lock waits of one user at once (429 beyond)")
	f.DurationVar(&o.LockStreamRecheck, "lock-stream-recheck", 15*time.Second, "how often lock event streams re-read their keys' standing (and send a keep-alive)")
	_ = f.MarkHidden("lock-stream-recheck")
	f.DurationVar(&o.LockLease, "lock-lease", lock.DefaultLease, "a lock holder that sends no heartbeat for this long counts as failed; its lock passes to the next waiter")
	f.DurationVar(&o.AsyncWindow, "async-window", async.DefaultWindow, "async downloads: requests for one file within this window (whole seconds) share one job")
	f.DurationVar(&o.AsyncTick, "async-tick", async.DefaultTick, "async downloads: how often the scheduler starts, advances and ends jobs (must be shorter than --lock-lease; by default a third of a lease shorter than 15s)")
	f.DurationVar(&o.AsyncTimeout, "async-timeout", async.DefaultTimeout, "async downloads: a running job ends Timeout after this long")
	f.DurationVar(&o.AsyncRecheck, "async-recheck", 2*time.Second, "how often agents' work streams re-read their work")
	_ = f.MarkHidden("async-recheck")
	f.StringVar(&trusted, "trusted-proxies", "", "reverse proxies (CIDR or address, comma-separated) whose X-Forwarded-For and X-Forwarded-Proto are believed: the client's address for login throttling and logs, TLS for Secure cookies; from other peers those headers are ignored")
	f.Float64Var(&thumbMP, "thumb-max-mp", thumb.DefaultMaxPixels/1e6, "thumbnails: largest image decoded, in megapixels; a bigger one (or a decompression bomb claiming one) is refused from its header, 415, before any pixel is decoded")
	f.StringVar(&thumbInput, "thumb-max-input", "64MiB", "thumbnails: largest image file read")
	f.StringVar(&thumbMemory, "thumb-memory", "256MiB", "thumbnails: most decoded pixels held by all decodes at once (requests beyond wait): bounds the RAM thumbnails take")
	f.StringVar(&thumbCache, "thumb-cache-size", "512MiB", "thumbnails: most bytes the node's thumbnail folder (--data/thumbs) keeps; least recently used out first")
	f.StringVar(&o.TLSCert, "tls-cert", "", "serve HTTPS only on --listen (TLS 1.2+, HTTP/2) with this PEM certificate (chain) file; re-read on SIGHUP and when the file changes")
	f.StringVar(&o.TLSKey, "tls-key", "", "the PEM private key of --tls-cert")
	f.BoolVar(&o.TLSSelfSigned, "tls-self-signed", false, "serve HTTPS with a self-signed certificate generated once into --data/tls and kept; its SHA-256 is logged at start and printed by 'netdisk admin tls', for clients' --tls-fingerprint")
	f.DurationVar(&o.TLSPoll, "tls-poll", daemon.DefaultTLSPoll, "how often the certificate files are checked for a change")
	f.StringVar(&o.HTTPRedirectListen, "http-redirect-listen", "", "with TLS: also listen for plain HTTP on this address, e.g. :80, and redirect every request to HTTPS (308)")
	f.StringVar(&acmeDomains, "acme-domain", "", "serve HTTPS only on --listen with certificates for these names (comma-separated) obtained and renewed from an ACME CA (Let's Encrypt by default, whose terms of service this accepts); kept in --data/acme, or in the --meta store for all nodes")
	f.StringVar(&o.ACMEEmail, "acme-email", "", "contact address of the ACME account (the CA writes about expiring or revoked certificates)")
	f.StringVar(&o.ACMECA, "acme-ca", autocert.DefaultACMEDirectory, "the ACME CA's directory URL (Let's Encrypt's staging CA, a private CA, Pebble for tests)")
	f.StringVar(&o.ACMECARoot, "acme-ca-root", "", "also trust the PEM certificates of this file when talking to the ACME CA (a test or private CA)")
	f.StringVar(&o.ACMEHTTPListen, "acme-http-listen", "", "with --acme-domain: listen for plain HTTP on this address, e.g. :80, to answer the CA's HTTP-01 challenges (other requests are redirected to HTTPS); --http-redirect-listen answers them too")
	f.DurationVar(&o.ACMECheck, "acme-check", daemon.DefaultACMECheck, "how often the ACME certificates are checked for renewal (and a failed order retried)")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&logJSON, "log-json", false, "log as JSON lines")
	f.StringVar(&o.MetricsListen, "metrics-listen", "", "also serve /metrics without authentication on this address, e.g. 127.0.0.1:9100 for Prometheus (keep it private; /metrics on --listen needs an admin)")
	f.StringVar(&o.ReadyFile, "ready-file", "", "write the listening address to this file once ready (for scripts and tests)")
	// Profiling is for developers measuring the daemon, not an operator knob.
	f.IntVar(&o.Conns.Max, "max-conns", 0, "most connections held at once; past it a new one closes the longest idle (0: half the file descriptor limit, at most 16384)")
	f.IntVar(&o.Conns.PerAddr, "max-conns-per-addr", server.DefaultPerAddr, "most connections held from one client address (a reverse proxy is one address)")
	f.DurationVar(&o.Conns.PreAuthTimeout, "preauth-timeout", server.DefaultPreAuthTimeout, "a connection that has not authenticated gets this long to send a request's headers (then the ordinary timeouts)")
	f.StringVar(&o.Pprof, "pprof", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6060")
	_ = f.MarkHidden("pprof")
	_ = strings.TrimSpace
	return cmd
}

// thumbFlags reads the thumbnail flags into o.
func thumbFlags(o *daemon.Options, mp float64, input, memory, cache string) error {
	if mp < 0.01 || mp > 1000 {
		return fmt.Errorf("--thumb-max-mp %v: want between 0.01 and 1000 megapixels", mp)
	}
	o.Thumbs.MaxPixels = int64(mp * 1e6)
	for _, f := range []struct {
		name, v string
		dst     *int64
	}{{"--thumb-max-input", input, &o.Thumbs.MaxInput}, {"--thumb-memory", memory, &o.Thumbs.Memory}, {"--thumb-cache-size", cache, &o.ThumbCacheSize}} {
		n, err := humanize.ParseBytes(f.v)
		if err != nil || n < 1<<20 || n > 1<<40 {
			return fmt.Errorf("%s %q: want a size between 1MiB and 1TiB", f.name, f.v)
		}
		*f.dst = int64(n)
	}
	return nil
}

// parseDays is time.ParseDuration that also takes whole days ("30d"), the
// unit retention is thought in.
func parseDays(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > 100*365 {
			return 0, fmt.Errorf("bad number of days %q", d)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// parsePercent reads "50%" (or "50") as 0.5: more than 0, at most 100%.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v <= 0 || v > 100 {
		return 0, fmt.Errorf("want a percentage above 0 and at most 100%%")
	}
	return v / 100, nil
}

// parseDomains reads --acme-domain: host names, lower-cased, without a
// trailing dot, each once. An address or a wildcard is refused here rather
// than by the CA after an order: TLS-ALPN-01 and HTTP-01 prove names only.
func parseDomains(s string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(s, ",") {
		d = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(d), "."))
		switch {
		case d == "":
			continue
		case strings.Contains(d, "*"):
			return nil, fmt.Errorf("--acme-domain %q: wildcards need DNS-01, which netdisk does not answer; name each host", d)
		case net.ParseIP(d) != nil || !strings.Contains(d, "."):
			return nil, fmt.Errorf("--acme-domain %q: want a DNS name such as drive.example.org", d)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--acme-domain %q: no name in it", s)
	}
	return out, nil
}
