// Package drive is netdisk's protocol-neutral file core: users, each user's
// namespace, files as chunk lists, the write path that cuts and deduplicates,
// the read path, files' earlier versions and their retention (versions.go),
// shares between users, resolved here for every surface (shares.go),
// garbage collection and checks. It is the only package that
// composes the chunk store (dedup) with the quota ledger (quota) and the
// metadata store (meta); the WebDAV adapter, the HTTP API (with the upload
// protocol, package upload) and FUSE are thin layers over it.
//
// Every write comes down here and nothing here calls back up: a file
// streamed whole goes through the Writer (write.go: WebDAV's PUT, and the
// API's one-request upload through PutFile, put.go); a file sent as an
// upload session's chunks goes through sessions.go, which writes down the
// order of the stores' calls it enforces.
package drive

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"netdisk/chunker"
	"netdisk/davlock"
	"netdisk/dedup"
	"netdisk/errs"
	"netdisk/internal/bytesize"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/vpath"
)

// Config wires a Drive.
type Config struct {
	Meta      meta.Store
	Blobs     dedup.BlobStore
	ChunkSize int64            // 0 means chunker.DefaultChunkSize
	Now       func() time.Time // nil means time.Now
	Logger    *slog.Logger     // nil means slog.Default()
	// HashWorkers bounds how many chunks are hashed at once across all
	// uploads; 0 means GOMAXPROCS (at least 2).
	HashWorkers int
	// Quota is the quota ledger guard (drive/quota.go) over Meta; required.
	// OpenLocal builds both.
	Quota *quota.Guard
	// Locks is the WebDAV lock table every mutating operation consults
	// (drive/locks.go); nil means a new in-process one.
	Locks davlock.Table
	// Pins keep chunks between store and commit safe from GC; nil means
	// in-process pins (one node). Nodes sharing a blob store share them
	// (dedup.SharedPins).
	Pins dedup.Pinner
	// MaxFileSize bounds every file's size, announced or streamed (413
	// beyond it); 0 means DefaultMaxFileSize. It keeps every size the quota
	// arithmetic sees far from overflow (at most quota.MaxBytes).
	MaxFileSize int64
	// SharedMeta says other nodes change the same metadata store
	// (PostgreSQL; OpenLocal sets it for a MetaURL): a remembered
	// credential is then confirmed against the store on every use, so a
	// password change or a deletion through any node holds on this one at
	// the next request. Alone, this node sees every change it must honour
	// and skips that read for authFresh.
	SharedMeta bool
	// TrashRetention is how long a deleted item stays in the trash
	// (history.go); 0 means DefaultTrashRetention.
	TrashRetention time.Duration
	// HistoryShare is the part (0..1] of a user's quota, or of Volume for a
	// user without one, their trash and versions may use together; 0 means
	// DefaultHistoryShare.
	HistoryShare float64
	// Volume returns the size of the volume the chunks are stored on; nil
	// (or 0) leaves the history of users without a quota bounded by age
	// alone.
	Volume func() int64
}

// DefaultMaxFileSize is the largest file accepted unless configured: 1 TiB.
const DefaultMaxFileSize = 1 << 40

// Drive is the file core.
type Drive struct {
	meta      meta.Store
	blobs     dedup.BlobStore
	pins      dedup.Pinner
	chunkSize int64
	workers   int
	hashSem   chan struct{} // shared by all uploads: hashing never oversubscribes the cores
	// chunkSlots bounds the full chunks all uploads together hold between
	// the body and the blob store (hashing or storing), inFlightChunks
	// per hashing worker: per upload, 8 parallel uploads of large files
	// held eight times as many buffers, for no more throughput (hashing
	// is bounded by hashSem, and the disk by its fsyncs).
	chunkSlots chan struct{}
	now        func() time.Time
	log        *slog.Logger

	// authCache remembers a successful password check (by a SHA-256 of the
	// password, bound to the stored hash) so WebDAV clients, which send Basic
	// credentials on every request, do not pay bcrypt each time.
	authMu    sync.Mutex
	authCache map[string]authEntry
	authGen   uint64        // bumped by staleAuth
	authFresh time.Duration // authFresh, or 0 with Config.SharedMeta

	gcMu   sync.Mutex    // one GC or fsck at a time
	gcRuns atomic.Uint64 // GC passes done (see reclaim)

	sumMu    sync.Mutex    // one checksum pass at a time (checksums.go)
	progress progress      // the background work's counts, for metrics (progress.go)
	sumKick  chan struct{} // wakes RunChecksums
	recv     *receiving    // chunk bodies being received: the pass waits for them (checksums.go)
	sums     *sessionSums  // sessions' running content checksums (sessionsums.go)
	sumYield func()        // tests: called when the pass starts waiting for uploads
	sumDefer time.Duration // how long the pass waits for uploads per file (checksums.go)
	sumQuiet time.Duration // how long after the latest chunk it waits (checksums.go)

	quota *quota.Guard
	locks davlock.Table

	maxFile int64 // see Config.MaxFileSize

	userHooksMu sync.Mutex
	userDeleted []func(context.Context, int64) error // OnUserDeleted

	reserve *diskReserve // nil: no reserve (OpenLocal sets one beside meta.db)

	trashRetention time.Duration // see Config.TrashRetention
	historyShare   float64       // see Config.HistoryShare
	volume         func() int64  // see Config.Volume
}

type authEntry struct {
	passHash string
	digest   [32]byte
	// user is the account as read when the entry was last confirmed
	// against the store, at checked: AuthenticateCached answers from it for
	// authFresh without a query.
	user    meta.User
	checked time.Time
}

// authFresh is how long a confirmed credential answers without reading the
// user's row again, on a store no other node changes (Config.SharedMeta):
// every change there (password, quota, deletion) is made through this
// process and ends the freshness at once (staleAuth). On a shared store the
// row is read on every use: another node's change is seen at the next
// request, for one indexed read.
const authFresh = time.Second

// staleAuth makes every remembered credential be confirmed against the
// store again (without bcrypt: the entries stay) before it is trusted.
func (d *Drive) staleAuth() {
	d.authMu.Lock()
	d.authGen++
	for k, e := range d.authCache {
		e.checked = time.Time{}
		d.authCache[k] = e
	}
	d.authMu.Unlock()
}

// authGeneration is read before the user's row: remember trusts the row only
// if no change made it stale meanwhile.
func (d *Drive) authGeneration() uint64 {
	d.authMu.Lock()
	defer d.authMu.Unlock()
	return d.authGen
}

// remember records a credential just confirmed against the store, whose row
// was read at generation gen (authGeneration). A row read before a change
// through this process is kept for the bcrypt shortcut but not as fresh.
func (d *Drive) remember(name string, u meta.User, digest [32]byte, gen uint64) {
	d.authMu.Lock()
	e := authEntry{passHash: u.PassHash, digest: digest, user: u}
	if gen == d.authGen {
		e.checked = d.now()
	}
	d.authCache[name] = e
	d.authMu.Unlock()
}

// New returns a Drive over the given stores.
func New(c Config) *Drive {
	d := &Drive{meta: c.Meta, blobs: inlineStore(c.Blobs, c.Meta), pins: dedup.NewPins(), chunkSize: c.ChunkSize,
		workers: c.HashWorkers, now: c.Now, log: c.Logger, authCache: map[string]authEntry{}, quota: c.Quota, locks: c.Locks,
		sumKick: make(chan struct{}, 1), recv: newReceiving(), sums: newSessionSums(), sumDefer: sumDefer, sumQuiet: sumQuiet}
	if c.Quota == nil {
		panic("drive: Config.Quota is required (OpenLocal wires one)")
	}
	if d.chunkSize <= 0 {
		d.chunkSize = chunker.DefaultChunkSize
	}
	d.authFresh = authFresh
	if c.SharedMeta {
		d.authFresh = 0
	}
	d.maxFile = c.MaxFileSize
	if d.maxFile <= 0 {
		d.maxFile = DefaultMaxFileSize
	}
	d.maxFile = min(d.maxFile, quota.MaxBytes)
	d.trashRetention, d.historyShare, d.volume = c.TrashRetention, c.HistoryShare, c.Volume
	if d.trashRetention <= 0 {
		d.trashRetention = DefaultTrashRetention
	}
	if d.historyShare <= 0 || d.historyShare > 1 {
		d.historyShare = DefaultHistoryShare
	}
	if d.workers <= 0 {
		d.workers = max(runtime.GOMAXPROCS(0), 2)
	}
	d.hashSem = make(chan struct{}, d.workers)
	d.chunkSlots = make(chan struct{}, inFlightChunks*d.workers)
	if d.now == nil {
		d.now = time.Now
	}
	if d.log == nil {
		d.log = slog.Default()
	}
	if c.Pins != nil {
		d.pins = c.Pins
	}
	if d.locks == nil {
		d.locks = davlock.NewManager(d.now)
	}
	return d
}

// inFlightChunks is how many full chunks per hashing worker the uploads
// together hold while they are hashed and stored (Drive.chunkSlots): four
// keep the workers fed while earlier chunks wait on their fsync.
const inFlightChunks = 4

// MaxFileSize is the largest file size accepted.
func (d *Drive) MaxFileSize() int64 { return d.maxFile }

// CheckFileSize refuses (TooLarge, 413) a file size over MaxFileSize.
func (d *Drive) CheckFileSize(op, p string, size int64) error {
	if size > d.maxFile {
		return errs.E(op, errs.TooLarge, p, fmt.Errorf("%s is over the maximum file size of %s", bytesize.Format(size), bytesize.Format(d.maxFile)))
	}
	return nil
}

// ChunkSize is the size files are cut at.
func (d *Drive) ChunkSize() int64 { return d.chunkSize }

// Now is the drive's clock.
func (d *Drive) Now() time.Time { return d.now() }

// ---- users

// HashPassword hashes a password for storage.
func HashPassword(password string) (string, error) {
	if len(password) == 0 {
		return "", errs.Errorf("drive.HashPassword", errs.Invalid, "empty password")
	}
	if len(password) > 72 {
		return "", errs.Errorf("drive.HashPassword", errs.Invalid, "password longer than 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	return string(h), err
}

// ErrBadCredentials is the one answer for an unknown user and a wrong
// password, so a client cannot probe which names exist.
var ErrBadCredentials = errs.E("drive.Authenticate", errs.Unauthenticated, "", errors.New("wrong user name or password"))

// dummyHash is compared against when the user does not exist, so both
// failures take the same time.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("netdisk-dummy"), bcrypt.DefaultCost)

// Authenticate checks a user name and password.
func (d *Drive) Authenticate(ctx context.Context, name, password string) (meta.User, error) {
	gen := d.authGeneration()
	u, err := d.meta.UserByName(ctx, name)
	if errs.Is(err, errs.NotFound) {
		bcrypt.CompareHashAndPassword(dummyHash, []byte(password))
		return meta.User{}, ErrBadCredentials
	}
	if err != nil {
		return meta.User{}, err
	}
	digest := sha256.Sum256([]byte(password))
	d.authMu.Lock()
	e, ok := d.authCache[name]
	d.authMu.Unlock()
	if !ok || e.passHash != u.PassHash || subtle.ConstantTimeCompare(e.digest[:], digest[:]) != 1 {
		if bcrypt.CompareHashAndPassword([]byte(u.PassHash), []byte(password)) != nil {
			return meta.User{}, ErrBadCredentials
		}
	}
	d.remember(name, u, digest, gen)
	return u, nil
}

// AuthenticateCached is Authenticate for a password this process has
// verified before (the auth cache) and that is still the user's: ok is false
// whenever the cache cannot vouch, and then nothing was evaluated (call
// Authenticate). It never runs bcrypt, so the login throttle need not count
// it as an attempt. Within authFresh of the last confirmation (never on a
// shared store: Config.SharedMeta) it does not read the store either
// (WebDAV clients send credentials with every request): the user's usage
// figures (Finished, Unfinished) may then be that old; whoever needs them
// current asks the quota guard.
func (d *Drive) AuthenticateCached(ctx context.Context, name, password string) (meta.User, bool) {
	d.authMu.Lock()
	e, ok := d.authCache[name]
	d.authMu.Unlock()
	if !ok {
		return meta.User{}, false
	}
	digest := sha256.Sum256([]byte(password))
	if subtle.ConstantTimeCompare(e.digest[:], digest[:]) != 1 {
		return meta.User{}, false
	}
	if age := d.now().Sub(e.checked); !e.checked.IsZero() && age >= 0 && age < d.authFresh {
		return e.user, true
	}
	gen := d.authGeneration()
	u, err := d.meta.UserByName(ctx, name)
	if err != nil || u.PassHash != e.passHash {
		return meta.User{}, false
	}
	d.remember(name, u, digest, gen)
	return u, true
}

// ValidUserName reports whether name is acceptable as a login.
func ValidUserName(name string) error {
	if name == "" || len(name) > 64 {
		return errs.Errorf("drive.ValidUserName", errs.Invalid, "user name must be 1 to 64 characters")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '@') {
			return errs.Errorf("drive.ValidUserName", errs.Invalid, "user name %q: only letters, digits and - _ . @", name)
		}
	}
	return nil
}

// AddUser creates a user.
func (d *Drive) AddUser(ctx context.Context, name, password string, isAdmin bool, quota int64) (meta.User, error) {
	if err := ValidUserName(name); err != nil {
		return meta.User{}, err
	}
	if quota < 0 {
		return meta.User{}, errs.Errorf("drive.AddUser", errs.Invalid, "negative quota")
	}
	h, err := HashPassword(password)
	if err != nil {
		return meta.User{}, err
	}
	return d.meta.CreateUser(ctx, name, h, isAdmin, quota)
}

// SetPassword changes a user's password.
func (d *Drive) SetPassword(ctx context.Context, name, password string) error {
	u, err := d.meta.UserByName(ctx, name)
	if err != nil {
		return err
	}
	h, err := HashPassword(password)
	if err != nil {
		return err
	}
	defer d.staleAuth()
	return d.meta.SetPassword(ctx, u.ID, h)
}

// SetQuota changes a user's total.
func (d *Drive) SetQuota(ctx context.Context, name string, total int64) error {
	if total < 0 {
		return errs.Errorf("drive.SetQuota", errs.Invalid, "negative quota")
	}
	u, err := d.meta.UserByName(ctx, name)
	if err != nil {
		return err
	}
	return d.setQuotaGuarded(ctx, u.ID, total)
}

// DeleteUser removes a user with their tree and their trash; their chunks
// are left to GC.
func (d *Drive) DeleteUser(ctx context.Context, name string) error {
	u, err := d.meta.UserByName(ctx, name)
	if err != nil {
		return err
	}
	return d.deleteUser(ctx, u.ID)
}

// ---- namespace

func clean(op, p string) (string, error) {
	c, err := vpath.Clean(p)
	if err != nil {
		return "", errs.E(op, errs.Invalid, p, err)
	}
	return c, nil
}

// Stat returns the node at p.
func (d *Drive) Stat(ctx context.Context, uid int64, p string) (meta.Node, error) {
	p, err := clean("drive.Stat", p)
	if err != nil {
		return meta.Node{}, err
	}
	ctx, w, err := d.resolve(ctx, "drive.Stat", uid, p, readAccess)
	if err != nil {
		return meta.Node{}, err
	}
	n, err := d.meta.Stat(ctx, w.uid, w.path)
	return w.node(n), w.err(err)
}

// TreeBytes returns the sizes of the files at or below p summed (a
// file's own size).
func (d *Drive) TreeBytes(ctx context.Context, uid int64, p string) (int64, error) {
	p, err := clean("drive.TreeBytes", p)
	if err != nil {
		return 0, err
	}
	if s, ok := ctx.Value(linkKey{}).(*linkScope); ok {
		// Only a link's view is mapped here: a PROPFIND asks this for
		// every folder it lists, and a resolution through the user's
		// shares would be one more query each.
		ctx, w, err := d.resolveLink(ctx, "drive.TreeBytes", s, uid, p, readAccess)
		if err != nil {
			return 0, err
		}
		n, err := d.meta.TreeBytes(ctx, w.uid, w.path)
		return n, w.err(err)
	}
	return d.meta.TreeBytes(ctx, uid, p)
}

// NodeByID returns user uid's node id; another user's id is NotFound, as
// an unknown one (ids are guessable: they must reveal nothing).
func (d *Drive) NodeByID(ctx context.Context, uid, id int64) (meta.Node, error) {
	return d.meta.NodeByID(ctx, uid, id)
}

// List returns the children of directory p.
func (d *Drive) List(ctx context.Context, uid int64, p string) ([]meta.Node, error) {
	p, err := clean("drive.List", p)
	if err != nil {
		return nil, err
	}
	ctx, w, err := d.resolve(ctx, "drive.List", uid, p, readAccess)
	if err != nil {
		return nil, err
	}
	ns, err := d.meta.List(ctx, w.uid, w.path)
	if err != nil {
		return nil, w.err(err)
	}
	return d.withEntries(ctx, w, w.nodes(ns)), nil
}

// ListPage returns up to limit children of directory p whose names sort
// after after (byte order; "" for the first page), by name, and the name to
// ask after for the next page ("" when this is the last). A share's entry
// shows once, at its name in the asker's tree, as the shared node; an entry
// whose share is gone is left out, so a page may hold fewer than limit.
func (d *Drive) ListPage(ctx context.Context, uid int64, p, after string, limit int) ([]meta.Node, string, error) {
	p, err := clean("drive.ListPage", p)
	if err != nil {
		return nil, "", err
	}
	ctx, w, err := d.resolve(ctx, "drive.ListPage", uid, p, readAccess)
	if err != nil {
		return nil, "", err
	}
	limit = max(limit, 1)
	ns, err := d.meta.ListPage(ctx, w.uid, w.path, after, limit)
	if err != nil {
		return nil, "", w.err(err)
	}
	next := ""
	if len(ns) > limit {
		// The cursor is the store's own name, taken before the entries
		// are replaced (withEntries drops dead ones).
		ns = ns[:limit]
		next = ns[len(ns)-1].Name()
	}
	return d.withEntries(ctx, w, w.nodes(ns)), next, nil
}

// CountTree counts nodes below p, up to limit+1.
func (d *Drive) CountTree(ctx context.Context, uid int64, p string, limit int) (int, error) {
	p, err := clean("drive.CountTree", p)
	if err != nil {
		return 0, err
	}
	ctx, w, err := d.resolve(ctx, "drive.CountTree", uid, p, readAccess)
	if err != nil {
		return 0, err
	}
	n, err := d.meta.CountTree(ctx, w.uid, w.path, limit)
	return n, w.err(err)
}

// Mkdir creates directory p; its parent must exist.
func (d *Drive) Mkdir(ctx context.Context, uid int64, p string) (meta.Node, error) {
	p, err := clean("drive.Mkdir", p)
	if err != nil {
		return meta.Node{}, err
	}
	ctx, w, err := d.resolve(ctx, "drive.Mkdir", uid, p, writeAccess)
	if err != nil {
		return meta.Node{}, err
	}
	if err := d.checkLocks(ctx, w.uid, davlock.Target{Path: w.path, Membership: true}); err != nil {
		return meta.Node{}, w.err(err)
	}
	n, err := d.mkdirCharged(ctx, "drive.Mkdir", w.uid, w.path, 0)
	return w.node(n), w.err(err)
}

// MkdirAll creates p and any missing parents.
func (d *Drive) MkdirAll(ctx context.Context, uid int64, p string) error {
	p, err := clean("drive.MkdirAll", p)
	if err != nil {
		return err
	}
	if p == "/" {
		return nil
	}
	ctx, w, err := d.resolve(ctx, "drive.MkdirAll", uid, p, writeAccess)
	if err != nil {
		return err
	}
	if w.m != nil {
		if w.path == w.m.TargetAt {
			return nil // the share's own folder: the top of what may be made
		}
		return w.err(d.MkdirAll(ctx, w.uid, w.path))
	}
	n, err := d.meta.Stat(ctx, uid, p)
	if err == nil {
		if !n.IsDir {
			return errs.E("drive.MkdirAll", errs.NotDir, p, nil)
		}
		return nil
	}
	if !errs.Is(err, errs.NotFound) {
		return err
	}
	if err := d.MkdirAll(ctx, uid, vpath.Parent(p)); err != nil {
		return err
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p, Membership: true}); err != nil {
		return err
	}
	_, err = d.mkdirCharged(ctx, "drive.MkdirAll", uid, p, 0)
	if errs.Is(err, errs.Exists) {
		return nil
	}
	return err
}

// Remove moves p and everything below it into the user's trash as one item
// (history.go); its chunks stay until the item is expunged.
func (d *Drive) Remove(ctx context.Context, uid int64, p string) error {
	p, err := clean("drive.Remove", p)
	if err != nil {
		return err
	}
	ctx, w, err := d.resolve(ctx, "drive.Remove", uid, p, readAccess)
	if err != nil {
		return err
	}
	if err := w.rootOfLink("drive.Remove", p); err != nil {
		return err
	}
	if w.entry {
		// The recipient's entry: removing it leaves the share.
		return d.leave(ctx, uid, *w.m)
	}
	if err := w.writable("drive.Remove", p); err != nil {
		return err
	}
	if w.m != nil {
		return w.err(d.Remove(ctx, w.uid, w.path))
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p, Deep: true, Membership: true}); err != nil {
		return err
	}
	remove := func(tx *meta.Tx) (int64, error) { return d.meta.RemoveTx(ctx, tx, uid, p) }
	err = d.measuredChange(ctx, uid, remove)
	if d.retryable(err) {
		err = d.measuredChange(ctx, uid, remove)
	}
	if err == nil {
		// The locks of what is gone go with it (RFC 4918 §9.6.1).
		d.locks.Release(uid, p)
	}
	return err
}

// Move renames src to dst within the user's drive.
func (d *Drive) Move(ctx context.Context, uid int64, src, dst string, overwrite bool) error {
	src, err := clean("drive.Move", src)
	if err != nil {
		return err
	}
	if dst, err = clean("drive.Move", dst); err != nil {
		return err
	}
	rctx, ws, err := d.resolve(ctx, "drive.Move", uid, src, readAccess)
	if err != nil {
		return err
	}
	_, wd, err := d.resolve(ctx, "drive.Move", uid, dst, writeAccess)
	if err != nil {
		return err
	}
	if err := ws.rootOfLink("drive.Move", src); err != nil {
		return err
	}
	ctx = rctx
	switch {
	case ws.entry && wd.m == nil:
		// The recipient moves their entry within their tree: their view.
	case ws.entry:
		return errs.E("drive.Move", errs.CrossTree, src, errors.New("a share's entry stays in your own files"))
	case ws.uid != wd.uid:
		if err := ws.writable("drive.Move", src); err != nil {
			return err // a move out deletes: refused by a read-only share first
		}
		return d.moveAcross(ctx, ws, wd, overwrite)
	case ws.m != nil || wd.m != nil:
		if err := ws.writable("drive.Move", src); err != nil {
			return err
		}
		if ws.m != nil {
			return ws.err(d.Move(ctx, ws.uid, ws.path, wd.path, overwrite))
		}
		return wd.err(d.Move(ctx, wd.uid, ws.path, wd.path, overwrite))
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: src, Deep: true, Membership: true},
		davlock.Target{Path: dst, Deep: true, Membership: true}); err != nil {
		return err
	}
	move := func(tx *meta.Tx) (int64, error) { return d.meta.MoveTx(ctx, tx, uid, src, dst, overwrite) }
	err = d.measuredChange(ctx, uid, move)
	if d.retryable(err) {
		err = d.measuredChange(ctx, uid, move)
	}
	if err == nil {
		// The source's locks do not move with it; a lock on the destination
		// itself takes the moved resource into its scope, while locks on
		// members of an overwritten destination are gone (RFC 4918 §7.7, §9.9).
		d.locks.Release(uid, src)
		d.locks.ReleaseBelow(uid, dst)
	}
	return err
}

// Copy copies src to dst, sharing chunks: no bytes are read or written.
func (d *Drive) Copy(ctx context.Context, uid int64, src, dst string, overwrite, recursive bool) error {
	src, err := clean("drive.Copy", src)
	if err != nil {
		return err
	}
	if dst, err = clean("drive.Copy", dst); err != nil {
		return err
	}
	rctx, ws, err := d.resolve(ctx, "drive.Copy", uid, src, readAccess)
	if err != nil {
		return err
	}
	_, wd, err := d.resolve(ctx, "drive.Copy", uid, dst, writeAccess)
	if err != nil {
		return err
	}
	ctx = rctx
	if ws.uid != wd.uid {
		return wd.err(d.copyAcross(ctx, ws, wd, overwrite, recursive))
	}
	if ws.m != nil || wd.m != nil {
		if ws.m != nil {
			return ws.err(d.Copy(ctx, ws.uid, ws.path, wd.path, overwrite, recursive))
		}
		return wd.err(d.Copy(ctx, wd.uid, ws.path, wd.path, overwrite, recursive))
	}
	// The source is only read: just the destination needs tokens.
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: dst, Deep: true, Membership: true}); err != nil {
		return err
	}
	if err := d.room("drive.Copy"); err != nil {
		return err
	}
	err = d.noteFull(d.copyWithHold(ctx, uid, src, dst, overwrite, recursive))
	if err == nil {
		// Locks are never copied; members of an overwritten destination are gone.
		d.locks.ReleaseBelow(uid, dst)
	}
	return err
}

// SetModTime sets p's modification time.
func (d *Drive) SetModTime(ctx context.Context, uid int64, p string, t time.Time) error {
	ctx, w, err := d.resolvePath(ctx, "drive.SetModTime", uid, p, writeAccess)
	if err != nil {
		return err
	}
	if w.m != nil {
		return w.err(d.SetModTime(ctx, w.uid, w.path, t))
	}
	return d.setAttr(ctx, "drive.SetModTime", uid, p, func(p string) error { return d.meta.SetModTime(ctx, uid, p, t) })
}

// setAttr runs set, the change of one of p's attributes, once p is a clean
// path and no lock the request does not hold covers it.
func (d *Drive) setAttr(ctx context.Context, op string, uid int64, p string, set func(p string) error) error {
	p, err := clean(op, p)
	if err != nil {
		return err
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: p}); err != nil {
		return err
	}
	return set(p)
}

// Props returns the dead properties of p.
func (d *Drive) Props(ctx context.Context, uid int64, p string) ([]meta.Prop, error) {
	n, err := d.Stat(ctx, uid, p)
	if err != nil {
		return nil, err
	}
	return d.meta.Props(ctx, n.ID)
}

// PatchProps sets and removes dead properties of p in one transaction.
func (d *Drive) PatchProps(ctx context.Context, uid int64, p string, set, remove []meta.Prop) error {
	ctx, w, err := d.resolvePath(ctx, "drive.PatchProps", uid, p, writeAccess)
	if err != nil {
		return err
	}
	if w.m != nil {
		return w.err(d.PatchProps(ctx, w.uid, w.path, set, remove))
	}
	n, err := d.Stat(ctx, uid, p)
	if err != nil {
		return err
	}
	if err := d.checkLocks(ctx, uid, davlock.Target{Path: n.Path}); err != nil {
		return err
	}
	if len(set) > 0 {
		if err := d.room("drive.PatchProps"); err != nil {
			return err
		}
	}
	return d.patchPropsCharged(ctx, uid, n.ID, set, remove)
}

// Quota is a user's view of their space.
type Quota struct {
	Total      int64 // 0 = unlimited
	Finished   int64 // the sizes of the user's files
	Metadata   int64 // what their entries and dead properties cost (meta/charge.go)
	Unfinished int64
	Uploading  int64 // sizes declared by open sessions and writes (ledger only)
}

// Free returns the bytes a new write may still declare, or -1 when
// unlimited: the admission rule counts what open sessions declared
// (Uploading), which covers what they received (Unfinished).
func (q Quota) Free() int64 {
	if q.Total <= 0 {
		return -1
	}
	return max(q.Total-q.Finished-q.Metadata-max(q.Uploading, q.Unfinished), 0)
}

// QuotaOf returns the user's quota figures as the ledger counts them. The
// ledger counts files and metadata as one figure; the metadata store says
// how much of it is metadata.
func (d *Drive) QuotaOf(ctx context.Context, uid int64) (Quota, error) {
	u, err := d.quota.Usage(ctx, uid)
	if err != nil {
		return Quota{}, err
	}
	mu, err := d.meta.UserByID(ctx, uid)
	if err != nil {
		return Quota{}, err
	}
	m := min(max(mu.Meta, 0), max(u.Finished, 0))
	return Quota{Total: u.Total, Finished: u.Finished - m, Metadata: m, Unfinished: u.Unfinished, Uploading: u.Uploading}, nil
}
