package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"netdisk/errs"
	"netdisk/lock"
	"netdisk/meta"
)

// ACME: certificates obtained and renewed from an ACME CA (Let's Encrypt by
// default) with golang.org/x/crypto/acme/autocert rather than certmagic.
// autocert is in x/crypto, already a dependency, and its Cache interface is
// all it takes to put the certificates, the account key and the answers to
// challenges in progress in the store the nodes share: any node then serves
// the certificate one node obtained and answers a challenge another node's
// order set (the CA may reach any node behind the name). certmagic would
// bring a storage, a lock and a clock of its own beside the metadata store,
// the lock service and the injected clock the daemon already has. What
// autocert lacks is added here: obtaining runs under the lock
// "acme:<domain>" (lock.Manager.Pull), so nodes neither race nor each
// order, and renewal is decided on the daemon's clock by the loop below
// (autocert's own renewal timers run on time.Now and take no lock).

// DefaultACMECheck is how often the ACME certificates are checked for
// renewal (and a failed order tried again). Let's Encrypt allows 5 failed
// validations per account and name an hour: one try every 20 minutes stays
// under it while a name that does not point here yet is being fixed.
const DefaultACMECheck = 20 * time.Minute

// acmeRenewMax is how long before expiry a certificate is renewed at the
// most: Let's Encrypt's 90-day certificates are renewed with 30 days left,
// shorter ones with a third of their lifetime left.
const acmeRenewMax = 30 * 24 * time.Hour

// autocertRenewBefore is the renewal margin autocert's own timers get. They
// cannot be switched off; with a margin of hours, far inside ours, they only
// ever find in the cache the certificate this loop renewed long before and
// take it without ordering.
const autocertRenewBefore = 2 * time.Hour

// acmeLockUser queues the nodes' orders under a user of their own, as the
// read cache's pulls do (cachePullUser): no client can name the "acme:"
// scope through the lock API.
const acmeLockUser = "nodes"

// acmeCerts obtains, renews and serves the certificates of the --acme-domain
// names.
type acmeCerts struct {
	domains []string
	cache   autocert.Cache
	dirURL  string
	httpc   *http.Client // talks to the CA, trusting --acme-ca-root
	email   string
	http01  bool // a plain HTTP listener answers HTTP-01
	locks   *lock.Manager
	node    lock.Node
	now     func() time.Time
	log     *slog.Logger

	// challenges answers the CA's challenges (TLS-ALPN-01 handshakes,
	// HTTP-01 requests) from the cache, whichever node's order set them.
	challenges *autocert.Manager

	kick chan chan struct{} // checkNow

	mu    sync.RWMutex
	certs map[string]*tls.Certificate // by domain: what this node serves
}

// newACME configures the ACME certificates from the options: the cache is
// the shared metadata store when nodes share one (Options.Meta), else
// DataDir/acme.
func (d *Daemon) newACME() (*acmeCerts, error) {
	o := d.opts
	var cache autocert.Cache
	if o.Meta != "" {
		cache = metaACMECache{d.Meta}
	} else {
		dir := filepath.Join(o.DataDir, "acme")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("acme: %w", err)
		}
		cache = autocert.DirCache(dir)
	}
	httpc, err := acmeHTTPClient(o.ACMECARoot)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	dirURL := o.ACMECA
	if dirURL == "" {
		dirURL = autocert.DefaultACMEDirectory
	}
	c := &acmeCerts{domains: o.ACMEDomains, cache: cache, dirURL: dirURL, httpc: httpc, email: o.ACMEEmail,
		http01: o.ACMEHTTPListen != "" || o.HTTPRedirectListen != "", locks: d.Locks,
		node: lock.Node{User: acmeLockUser, ID: d.node}, now: now, log: o.Logger,
		certs: map[string]*tls.Certificate{}, kick: make(chan chan struct{})}
	c.challenges = &autocert.Manager{Cache: cache, HostPolicy: c.hostPolicy}
	return c, nil
}

// acmeHTTPClient is the client for the CA: the system roots, plus the PEM
// certificates of caRoot when given (a test CA such as Pebble's).
func acmeHTTPClient(caRoot string) (*http.Client, error) {
	if caRoot == "" {
		return http.DefaultClient, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	b, err := os.ReadFile(caRoot)
	if err != nil {
		return nil, fmt.Errorf("--acme-ca-root: %w", err)
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--acme-ca-root %s: no PEM certificate in it", caRoot)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t, Timeout: 2 * time.Minute}, nil
}

// hostPolicy admits the configured names only (with or without a port, as
// an HTTP-01 request's Host may carry one): a client naming any other host
// must not make us ask the CA.
func (c *acmeCerts) hostPolicy(_ context.Context, host string) error {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, d := range c.domains {
		if host == d {
			return nil
		}
	}
	return fmt.Errorf("acme: host %q is not one of --acme-domain", host)
}

// GetCertificate serves a TLS handshake: the CA's TLS-ALPN-01 probe gets
// the challenge certificate, everyone else the certificate of the name
// asked for, or of the first domain when the name is none of ours (a
// client by address; it will refuse the name, not miss a handshake).
func (c *acmeCerts) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acme.ALPNProto {
		return c.challenges.GetCertificate(hello)
	}
	name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
	c.mu.RLock()
	defer c.mu.RUnlock()
	if cert := c.certs[name]; cert != nil {
		return cert, nil
	}
	if cert := c.certs[c.domains[0]]; cert != nil {
		return cert, nil
	}
	return nil, fmt.Errorf("acme: no certificate for %q yet", hello.ServerName)
}

// HTTPHandler answers HTTP-01 challenges and passes every other request to
// fallback.
func (c *acmeCerts) HTTPHandler(fallback http.Handler) http.Handler {
	return c.challenges.HTTPHandler(fallback)
}

// run obtains the certificates at once, then checks them for renewal every
// `every`, at each receive on hup (SIGHUP: an operator who fixed DNS need
// not wait) and at each checkNow, until ctx ends. Checks run one at a time:
// a node pulls one domain's lock from one goroutine only (lock.Manager.Pull).
func (c *acmeCerts) run(ctx context.Context, every time.Duration, hup <-chan os.Signal) {
	if every <= 0 {
		every = DefaultACMECheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	c.check(ctx)
	for {
		var done chan struct{}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-hup:
		case done = <-c.kick:
		}
		c.check(ctx)
		if done != nil {
			close(done)
		}
	}
}

// checkNow has run check once more and waits until it did.
func (c *acmeCerts) checkNow(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case c.kick <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// check makes sure every domain has a certificate that is not due for
// renewal, obtaining one where it has not. A failure is logged; the
// certificate in service, if any, stays until the next check.
func (c *acmeCerts) check(ctx context.Context) {
	for _, d := range c.domains {
		if err := c.ensure(ctx, d); err != nil && ctx.Err() == nil {
			c.log.Error("acme: obtaining a certificate failed; trying again at the next check", "domain", d, "err", err)
		}
	}
}

// ensure is one domain's check. The lock makes one node order while the
// others wait for it; once woken they find the new certificate in the
// shared cache (have) and take it without ordering.
func (c *acmeCerts) ensure(ctx context.Context, domain string) error {
	have := func() bool {
		cert, err := c.load(ctx, domain)
		if err != nil {
			if !errors.Is(err, autocert.ErrCacheMiss) {
				c.log.Warn("acme: reading the cached certificate", "domain", domain, "err", err)
			}
			return false
		}
		return !c.due(cert.Leaf)
	}
	return c.locks.Pull(ctx, lock.PullOp, "acme:"+domain, c.node, have, func(ctx context.Context) error {
		return c.obtain(ctx, domain)
	})
}

// due says whether a certificate is to be renewed now, on the daemon's
// clock: within a third of its lifetime, at most acmeRenewMax, of its end.
func (c *acmeCerts) due(leaf *x509.Certificate) bool {
	before := min(acmeRenewMax, leaf.NotAfter.Sub(leaf.NotBefore)/3)
	return !c.now().Before(leaf.NotAfter.Add(-before))
}

// load reads the domain's certificate from the cache and, when it is not
// the one served, serves it from now on. A certificate that is not for
// domain (a cache entry written by hand, a key that does not match) is an
// error, not served.
func (c *acmeCerts) load(ctx context.Context, domain string) (*tls.Certificate, error) {
	data, err := c.cache.Get(ctx, domain)
	if err != nil {
		return nil, err
	}
	// autocert stores the private key and the chain as PEM blocks in one
	// entry; X509KeyPair picks each out and checks that they match.
	cert, err := tls.X509KeyPair(data, data)
	if err != nil {
		return nil, fmt.Errorf("acme: cached certificate of %s: %w", domain, err)
	}
	if err := cert.Leaf.VerifyHostname(domain); err != nil {
		return nil, fmt.Errorf("acme: cached certificate: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.certs[domain]; old == nil || !old.Leaf.Equal(cert.Leaf) {
		c.certs[domain] = &cert
		c.log.Info("acme: serving certificate", "domain", domain, "not_after", cert.Leaf.NotAfter, "serial", cert.Leaf.SerialNumber.Text(16))
	}
	return &cert, nil
}

// obtain orders a new certificate for domain and serves it. Each order
// gets an autocert.Manager of its own: a Manager keeps a certificate it has
// in memory until its own clock says it expires, so a renewal decided on
// our clock needs a fresh one, which sees the cache through orderCache.
func (c *acmeCerts) obtain(ctx context.Context, domain string) error {
	m := &autocert.Manager{
		Prompt:      autocert.AcceptTOS,
		Cache:       &orderCache{Cache: c.cache, hide: domain},
		HostPolicy:  c.hostPolicy,
		RenewBefore: autocertRenewBefore,
		Email:       c.email,
		Client:      &acme.Client{DirectoryURL: c.dirURL, HTTPClient: c.httpc, UserAgent: "netdisk"},
	}
	if c.http01 {
		m.HTTPHandler(nil) // offers HTTP-01 besides TLS-ALPN-01; the handler is c.challenges'
	}
	c.log.Info("acme: ordering a certificate", "domain", domain, "ca", c.dirURL)
	// A ClientHello of a client that takes ECDSA: autocert orders the
	// certificate the hello's client can use, and every current client
	// takes ECDSA P-256.
	hello := &tls.ClientHelloInfo{ServerName: domain,
		CipherSuites:     []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		SignatureSchemes: []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
		SupportedCurves:  []tls.CurveID{tls.CurveP256}}
	// GetCertificate takes no context (it bounds itself to 5 minutes):
	// waited for here until ctx ends, so a shutdown does not wait on a CA.
	done := make(chan error, 1)
	go func() {
		_, err := m.GetCertificate(hello)
		done <- err
	}()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-done:
		if err != nil {
			return errs.E("acme.obtain", errs.Unavailable, "", err)
		}
	}
	_, err := c.load(ctx, domain)
	return err
}

// orderCache is the cache as one order sees it: the domain's certificate
// is hidden until the order put its own, so autocert orders instead of
// returning the cached certificate being renewed. Everything else (the
// account key, the answers to challenges) is the cache's, shared.
type orderCache struct {
	autocert.Cache
	hide string

	mu  sync.Mutex
	put bool
}

func (o *orderCache) hidden(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.put && (key == o.hide || key == o.hide+"+rsa")
}

func (o *orderCache) Get(ctx context.Context, key string) ([]byte, error) {
	if o.hidden(key) {
		return nil, autocert.ErrCacheMiss
	}
	return o.Cache.Get(ctx, key)
}

func (o *orderCache) Put(ctx context.Context, key string, data []byte) error {
	if err := o.Cache.Put(ctx, key, data); err != nil {
		return err
	}
	if key == o.hide {
		o.mu.Lock()
		o.put = true
		o.mu.Unlock()
	}
	return nil
}

// metaACMECache is autocert's cache over the metadata store the nodes share.
type metaACMECache struct{ m meta.ACMECache }

func (c metaACMECache) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := c.m.ACMECacheGet(ctx, key)
	if errs.Is(err, errs.NotFound) {
		return nil, autocert.ErrCacheMiss
	}
	return b, err
}

func (c metaACMECache) Put(ctx context.Context, key string, data []byte) error {
	return c.m.ACMECachePut(ctx, key, data)
}

func (c metaACMECache) Delete(ctx context.Context, key string) error {
	return c.m.ACMECacheDelete(ctx, key)
}
