// Package meta is netdisk's metadata store and the only owner of its SQL:
// users, each user's tree of directories, files and symbolic links (whose
// targets it keeps and never resolves), files as ordered lists of chunks,
// chunk records, WebDAV dead properties, upload sessions with
// their chunks and challenges, the quota ledger's flush records, the web
// page's sign-in sessions, the users' app passwords, the files' earlier
// versions, the users' trash and the shares between users with the groups
// they name. Store is the contract, split by role
// (Users, Tree, Props, Checksums, Chunks, Sessions, QuotaRecords,
// WebSessions, AppTokens, NameSearch, Versions, Trash, SharesStore) so each caller
// depends on what it uses; SQLStore implements it on a SQLite file or on a
// PostgreSQL database shared by several nodes, the same methods on either,
// and metatest is the conformance suite every implementation passes.
// Callers compose changes in one transaction through Tx, which keeps the
// database's own handle inside the package.
//
// Every method that touches a tree is scoped by user id: there is no query
// that can reach another user's nodes. A user id is never given twice.
package meta

import (
	"context"
	"database/sql"
	"netdisk/chunker"
	"time"
)

// User is an account.
type User struct {
	ID         int64
	Name       string
	PassHash   string
	IsAdmin    bool
	QuotaTotal int64 // bytes; 0 means unlimited
	Finished   int64 // sum of logical sizes of the user's files
	Unfinished int64 // bytes received in open upload sessions
	Meta       int64 // what the user's entries and dead properties cost (charge.go)
	Created    time.Time
}

// Node is a file, directory or symbolic link in a user's tree (Kind).
type Node struct {
	ID       int64
	UserID   int64
	Path     string // cleaned, absolute; "/" is the root
	IsDir    bool
	Size     int64
	Mode     uint32 // permission bits as stored (mode.go: 0 means default, ModeSet is 000); Perm() reads them
	ModTime  time.Time
	FileHash string // lowercase hex; "" for directories
	// MD5 and SHA1 are the whole content's checksums (lowercase hex), "" until
	// known: a WebDAV PUT records them at commit, other writes leave them to
	// the drive's background pass. Never a guess.
	MD5, SHA1 string
	// Target is a symbolic link's target, "" for files and directories. It
	// is an opaque string the store keeps and returns, never resolved: the
	// client's kernel follows it, as on a local filesystem. A link is not
	// a directory (IsDir false), has no chunks and no file hash, and its
	// Size is len(Target), charged like a file of that size.
	Target string
	// TreeSeq changes whenever anything at or below a folder changes, at
	// any depth (with its own modification time, a folder's ETag): the
	// store keeps it in the transaction of every change.
	TreeSeq int64
}

// NodeKind is what a node is.
type NodeKind int

const (
	KindFile NodeKind = iota
	KindDir
	KindSymlink
)

// String names the kind as listings show it ("file", "dir", "symlink").
func (k NodeKind) String() string {
	switch k {
	case KindDir:
		return "dir"
	case KindSymlink:
		return "symlink"
	}
	return "file"
}

// Kind tells a file, a directory and a symbolic link apart.
func (n Node) Kind() NodeKind {
	switch {
	case n.IsDir:
		return KindDir
	case n.Target != "":
		return KindSymlink
	}
	return KindFile
}

// IsSymlink reports whether the node is a symbolic link.
func (n Node) IsSymlink() bool { return !n.IsDir && n.Target != "" }

// IsFile reports whether the node is a regular file: content in chunks.
func (n Node) IsFile() bool { return !n.IsDir && n.Target == "" }

// MaxSymlinkTarget is the longest target a link may hold, in bytes: Linux's
// PATH_MAX, which no local filesystem exceeds either.
const MaxSymlinkTarget = 4096

// Name returns the last element of the node's path ("/" for the root).
func (n Node) Name() string { return baseName(n.Path) }

// Chunk is a stored chunk record.
type Chunk struct {
	ID     int64
	SHA256 string
	MD5    string
	Size   int64
	// Data, in a NewFile being committed, is the chunk's content to keep
	// inline in the store (small chunks: see ChunkData) when the commit
	// creates the chunk's record; nil when the bytes are in the blob store.
	// A record that exists already keeps its bytes where they are. In what
	// OpenFile returns, it is the inline chunk's bytes (nil for a blob).
	Data []byte
}

// FileChunk is a chunk at a position in a file.
type FileChunk struct {
	Index  int64
	Offset int64 // byte offset of the chunk in the file
	Chunk
}

// ContentSHA256 is the SHA-256 name (chunker.FileSHA256) of the content
// made of cs: what binds a file's bytes where its MD5-made hash cannot.
func ContentSHA256(cs []FileChunk) string {
	shas := make([]string, len(cs))
	for i, c := range cs {
		shas[i] = c.SHA256
	}
	return chunker.FileSHA256(shas)
}

// NewFile is the content of a file version being committed.
type NewFile struct {
	Size     int64
	FileHash string
	ModTime  time.Time
	Mode     uint32
	Chunks   []Chunk // in order; ID may be zero (the store finds or inserts by SHA256)
	// MD5 and SHA1 of the whole content when the writer computed them as the
	// bytes arrived; "" leaves them unknown for the background pass.
	MD5, SHA1 string
	// Replacing tells the store a file was at the path when the write
	// began, so the commit looks it up first rather than trying to insert a
	// new one first. Only the order of statements follows from it: either
	// way the commit is correct.
	Replacing bool
	// FreeName commits a new file only: when the path is taken (by a file
	// or a folder), the file goes in at the first free "name (2).ext",
	// "name (3).ext"… of the same folder, chosen inside the commit's
	// transaction, and the node returned has that path. Whoever writes
	// through a file-drop link may not replace what they cannot see.
	FreeName bool
}

// Prop is a WebDAV dead property.
type Prop struct {
	Space, Local string
	Lang         string
	InnerXML     string
}

// Stats are store-wide figures for `netdisk admin stats`.
type Stats struct {
	Users         int64
	Files         int64
	Dirs          int64
	LogicalBytes  int64 // sum of file sizes over all users
	PhysicalBytes int64 // sum of distinct chunk sizes
	Chunks        int64
}

// The store's contract is split by role; each caller depends on the smallest
// interface it uses. Errors carry an errs.Kind (errors.go): NotFound for a
// missing path, user or session, Exists for a name taken, NotDir / IsDir /
// NoParent for a path that does not fit the tree, Quota when a commit would
// exceed the user's total, Invalid for a mode with bits outside PermBits;
// and for any method, Unavailable when the database is busy past its
// timeout, NoSpace when its disk is full, Other for the unexpected.
// meta/metatest is the conformance suite every Store passes.

// Users are the accounts.
type Users interface {
	// CreateUser inserts a user with an empty root directory. A name taken
	// without regard to case is Exists.
	CreateUser(ctx context.Context, name, passHash string, isAdmin bool, quota int64) (User, error)
	// UserByName looks a user up by name, ignoring case.
	UserByName(ctx context.Context, name string) (User, error)
	UserByID(ctx context.Context, id int64) (User, error)
	// ListUsers returns every user by name.
	ListUsers(ctx context.Context) ([]User, error)
	// DeleteUser removes a user with their tree, their upload sessions and
	// their web sessions. A deleted user's id is never given to another
	// user: whatever still names it elsewhere (async records, locks, caches)
	// can never become someone else's.
	DeleteUser(ctx context.Context, id int64) error
	// DeleteUserKeepingAdmin is DeleteUser, except that removing the last
	// admin is Conflict (wrapping ErrLastAdmin) and removes nothing. The
	// rule holds across every node sharing the store: the check and the
	// delete are one transaction, serialised with every other write.
	// NotFound for a missing user.
	DeleteUserKeepingAdmin(ctx context.Context, id int64) error
	// SetPassword replaces the password hash and ends the user's web
	// sessions (a new password is a new sign-in everywhere).
	SetPassword(ctx context.Context, id int64, passHash string) error
	// SetQuota sets a user's total (0 = unlimited).
	SetQuota(ctx context.Context, id int64, total int64) error
}

// Tree is each user's tree of directories and files.
type Tree interface {
	Stat(ctx context.Context, uid int64, path string) (Node, error)
	// NodeByID returns user uid's node id (a stable file id clients
	// name a file by); another user's id is NotFound, as a missing one.
	NodeByID(ctx context.Context, uid, id int64) (Node, error)
	// List returns the children of dir by name (NotDir for a file).
	List(ctx context.Context, uid int64, dir string) ([]Node, error)
	// ListDir returns the node at dir and, if it is a directory, its children.
	ListDir(ctx context.Context, uid int64, dir string) (Node, []Node, error)
	// ListPage returns up to limit+1 children of dir whose names sort
	// after after in byte order ("" starts at the first), by name; more
	// than limit says another page follows. Paging by name lists every
	// entry that exists throughout exactly once, whatever is added or
	// removed between pages (NotDir for a file).
	ListPage(ctx context.Context, uid int64, dir, after string, limit int) ([]Node, error)
	// Tree returns the nodes below dir in path order, at most limit+1.
	Tree(ctx context.Context, uid int64, dir string, limit int) ([]Node, error)
	// CountTree returns how many nodes lie below dir (bounded by limit+1, so
	// callers can refuse a deep walk cheaply).
	CountTree(ctx context.Context, uid int64, dir string, limit int) (int, error)
	// Mkdir creates a directory whose parent exists, and sets the parent's
	// modification time to mtime.
	Mkdir(ctx context.Context, uid int64, path string, mtime time.Time) (Node, error)
	// MkdirMode is Mkdir with permission bits stored from the start.
	MkdirMode(ctx context.Context, uid int64, path string, mtime time.Time, perm uint32) (Node, error)
	// CommitFile makes f the content at path in one transaction, replacing an
	// older version; readers see the old or the new version, never a mix. A
	// new file touches its folder; a new version of a file does not. The
	// replaced content is kept as a version of the file (Versions).
	CommitFile(ctx context.Context, uid int64, path string, f NewFile) (Node, error)
	// Remove moves path and everything below it into the user's trash as
	// one item (Trash; the root is Permission).
	Remove(ctx context.Context, uid int64, path string) error
	// Move renames src to dst. With overwrite, an existing dst is removed first
	// (in the same transaction: to the trash when either is a folder);
	// without, an existing dst is Exists. A destination inside the source
	// is Permission. A file moved over a file replaces its content instead:
	// dst's node survives with its history (Versions).
	Move(ctx context.Context, uid int64, src, dst string, overwrite bool) error
	// Copy copies src to dst sharing chunks (no bytes are copied). recursive
	// false copies only the directory itself. A file copied over a file
	// replaces its content, as Move does.
	Copy(ctx context.Context, uid int64, src, dst string, overwrite, recursive bool) error
	SetModTime(ctx context.Context, uid int64, path string, mtime time.Time) error
	// SetMode stores permission bits (≤ 0o7777, else Invalid); they are
	// numbers for clients, never acted on by the server (meta/mode.go).
	SetMode(ctx context.Context, uid int64, path string, perm uint32) error
	// Symlink creates a symbolic link at path (whose parent exists) holding
	// target, and sets the parent's modification time to mtime. A target
	// that is empty, longer than MaxSymlinkTarget or holds a NUL byte is
	// Invalid (TooLarge for the length); a name taken is Exists.
	Symlink(ctx context.Context, uid int64, path, target string, mtime time.Time) (Node, error)
	// FileChunks returns a file's chunks in order with their offsets.
	FileChunks(ctx context.Context, nodeID int64) ([]FileChunk, error)
	// OpenFile is Stat, with FileChunks for a file, each chunk kept inline
	// carrying its bytes (Chunk.Data, as ChunkData), read at one point in
	// time: what a read of the file needs, in one query.
	OpenFile(ctx context.Context, uid int64, path string) (Node, []FileChunk, error)
}

// Props are WebDAV dead properties.
type Props interface {
	Props(ctx context.Context, nodeID int64) ([]Prop, error)
	// PropsUnder returns the dead properties of dir and its children (or its
	// whole subtree when recursive), keyed by node id, in one query.
	PropsUnder(ctx context.Context, uid int64, dir string, recursive bool) (map[int64][]Prop, error)
	// PatchProps sets and removes dead properties in one transaction.
	PatchProps(ctx context.Context, nodeID int64, set []Prop, remove []Prop) error
}

// Checksums are the whole-content checksums the background pass fills in.
type Checksums interface {
	// PendingChecksums lists up to limit files (any user) whose content
	// checksums are not known yet, by id after afterID.
	PendingChecksums(ctx context.Context, afterID int64, limit int) ([]Node, error)
	// SetChecksums records the content checksums of file nodeID if it still
	// holds the version they were computed from (same file hash and size,
	// checksums still unknown), and reports whether it did.
	SetChecksums(ctx context.Context, nodeID int64, fileHash string, size int64, md5, sha1 string) (bool, error)
}

// Chunks are the chunk records, for deduplication, GC and fsck.
type Chunks interface {
	// ChunksByMD5 returns every chunk with that MD5 (usually zero or one).
	ChunksByMD5(ctx context.Context, md5 string) ([]Chunk, error)
	ChunkBySHA256(ctx context.Context, sha string) (Chunk, error)
	// UnreferencedChunks lists chunks no file, no session and no file
	// version references (candidates for GC).
	UnreferencedChunks(ctx context.Context, limit int) ([]Chunk, error)
	// DeleteChunkIfUnreferenced removes the chunk record if still unreferenced
	// and reports whether it did.
	DeleteChunkIfUnreferenced(ctx context.Context, sha string) (bool, error)
	// EachChunk calls fn for every chunk record.
	EachChunk(ctx context.Context, fn func(Chunk) error) error
	// ChunkData returns the bytes of a chunk kept inline (committed with
	// Chunk.Data); found is false for a chunk whose bytes are in the blob
	// store, or that has no record.
	ChunkData(ctx context.Context, sha string) (data []byte, found bool, err error)
	// Stats sums the store.
	Stats(ctx context.Context) (Stats, error)
}

// Sessions are the upload sessions of the chunked upload API: the rows
// package upload keeps its protocol state in. A session's chunks are
// referenced from the session, so garbage collection keeps them until it
// merges, is dropped or expires. Every method that closes a session
// (MergeSession, DropSession, DropIdleSession) settles the upload's quota
// flushes in the same transaction (QuotaRecords), as the ledger requires.
// Times are the caller's (now, notBefore, …): the store reads no clock for
// sessions. Besides the kinds named below, any method may return the
// store-wide ones (Unavailable, NoSpace, Other).
type Sessions interface {
	// ResumeSession finds the newest open session of uid for path and
	// size, touched at or after notBefore, whose file hash is fileHash or
	// unknown (fileHash "" matches any), touches it at now (recording
	// fileHash when given) and returns its id; "" and no error when there
	// is none.
	ResumeSession(ctx context.Context, uid int64, path string, size int64, fileHash string, notBefore, now time.Time) (string, error)
	// CreateSession inserts ss (open, touched at now) unless a session
	// ResumeSession would find exists: then it touches that one instead.
	// It returns the id of the session in use, ss.ID or the other one. A
	// taken ss.ID is Exists; an unknown user is Other.
	CreateSession(ctx context.Context, ss Session, notBefore, now time.Time) (string, error)
	// Session returns uid's session id. A missing session, or another
	// user's, is NotFound wrapping ErrNoSession (the two look the same).
	Session(ctx context.Context, uid int64, id string) (Session, error)
	// SessionChunks returns the chunks session id holds, by index (none for
	// a missing session).
	SessionChunks(ctx context.Context, id string) ([]SessionChunk, error)
	// SessionChunkAt returns the chunk session id holds at idx, and whether
	// it holds one.
	SessionChunkAt(ctx context.Context, id string, idx int64) (Chunk, bool, error)
	// AddSessionChunk records c as the chunk at idx of open session id,
	// counts its bytes in Received and touches the session at now, in one
	// transaction. With c.ID zero the chunk record is found or inserted by
	// SHA-256 (the caller stored the blob durably first and pins it); with
	// c.ID set the record must still exist with that SHA-256, else
	// ErrChunkGone (NotFound). The same chunk at the same index again is
	// success and changes nothing; another chunk there is ErrIndexTaken
	// (Conflict); a missing session is ErrNoSession (NotFound), a merged
	// one ErrSessionClosed (Conflict).
	AddSessionChunk(ctx context.Context, id string, idx int64, c Chunk, now time.Time) error
	// MergeSession commits f as the file at open session id's path and
	// closes the session, in one transaction: the file version is committed
	// as TreeTx.CommitFileTx does, its growth of the user's finished bytes
	// bounded by the session's declared size (Quota beyond); the upload's
	// quota flushes are settled; the session becomes merged with
	// resultHash, Received 0, touched at now. It returns the node, the
	// growth of the finished bytes and that of the metadata charge (not
	// checked against the total here: the caller reserved it before). A
	// session missing or no longer open is ErrNoSession (NotFound): it
	// expired or was aborted meanwhile. Tree errors are CommitFile's.
	MergeSession(ctx context.Context, id string, f NewFile, resultHash string, now time.Time) (Node, int64, int64, error)
	// DropSession deletes session id (its chunk references and challenges
	// with it) in one transaction with the settlement of an open one's
	// quota flushes, and returns it as it was. A missing session is
	// success with found false: a drop is idempotent.
	DropSession(ctx context.Context, id string, now time.Time) (s Session, found bool, err error)
	// IdleSessions returns the ids of up to limit sessions DropIdleSession
	// would drop: open ones untouched since openBefore, merged ones
	// untouched since mergedBefore.
	IdleSessions(ctx context.Context, openBefore, mergedBefore time.Time, limit int) ([]string, error)
	// DropIdleSession is DropSession of a session that is still idle when
	// its transaction looks (a chunk that touched it meanwhile keeps it);
	// dropped reports whether it was dropped.
	DropIdleSession(ctx context.Context, id string, openBefore, mergedBefore, now time.Time) (s Session, dropped bool, err error)
	// UserSessions returns uid's open sessions, the most recently touched
	// first (ties by id), Received counted as the ledger counts it.
	UserSessions(ctx context.Context, uid int64) ([]Session, error)
	// OpenSessions returns every open session with the chunks it holds, by
	// id (the quota ledger rebuilds its holds from them).
	OpenSessions(ctx context.Context) ([]OpenSession, error)
	// CountOpenSessions returns how many sessions are open, without
	// reading their chunks (a gauge reads it at every scrape).
	CountOpenSessions(ctx context.Context) (int64, error)
	// PutSessionPart records pieces (chunks stored durably and pinned by
	// the caller) as the part name of a sync client's chunked upload into
	// open session id, replacing a part of that name, and touches the
	// session, in one transaction (sessionparts.go). A missing session is
	// ErrNoSession (NotFound), a merged one ErrSessionClosed (Conflict).
	PutSessionPart(ctx context.Context, id, name string, pieces []Chunk, now time.Time) error
	// SessionPieces returns the pieces of session id's parts, by part name
	// and place.
	SessionPieces(ctx context.Context, id string) ([]SessionPiece, error)
	// SetSessionPath sets the target path of open session id (a chunked
	// upload whose target is named only by its end); a missing or merged
	// session is ErrNoSession.
	SetSessionPath(ctx context.Context, id, path string) error
	// PutChallenge stores ch for session id, replacing any challenge at the
	// same index. A missing session is Other.
	PutChallenge(ctx context.Context, id string, ch Challenge) error
	// TakeChallenge removes and returns the challenge of session id at idx
	// (single use: it is gone whatever the caller decides), and whether
	// there was one. Expiry is the caller's to check.
	TakeChallenge(ctx context.Context, id string, idx int64) (Challenge, bool, error)
	// DeleteExpiredChallenges removes the challenges that expired before t
	// and returns how many.
	DeleteExpiredChallenges(ctx context.Context, t time.Time) (int64, error)
	// ChunksHeld returns every chunk with that MD5 and size (usually zero
	// or one) with who holds it: Own for uid, Owners counted up to limit.
	// It answers instant upload in one read whatever the content.
	ChunksHeld(ctx context.Context, uid int64, md5 string, size int64, limit int) ([]HeldChunk, error)
	// FileHeld finds a file version of fileHash and size, uid's own when
	// uid has one, else any user's, and returns its node id (for
	// FileChunks) with who holds that content: Own for uid, Owners counted
	// up to limit, the draw of the file hash. found is false when no file
	// has it.
	FileHeld(ctx context.Context, uid int64, fileHash string, size int64, limit int) (nodeID int64, h Holders, found bool, err error)
	// OwnFileWithContent finds one of uid's files whose content has file
	// hash fileHash, size and SHA-256 name fileSHA (chunker.FileSHA256 of
	// its chunks): among a user's files sharing the MD5-made file hash, the
	// one holding these very bytes. found is false when none does.
	OwnFileWithContent(ctx context.Context, uid int64, fileHash string, size int64, fileSHA string) (nodeID int64, found bool, err error)
	// FileWithContentAt is OwnFileWithContent among uid's files at or
	// below path at (a file or a folder): the content a share of that
	// node lets its recipients read.
	FileWithContentAt(ctx context.Context, uid int64, at string, fileHash string, size int64, fileSHA string) (nodeID int64, found bool, err error)
}

// QuotaRecords are the quota ledger's flush records (quota.go).
type QuotaRecords interface {
	ApplyQuotaFlushes(ctx context.Context, fs []QuotaFlush) (int64, error)
	RepairQuotaFlushes(ctx context.Context, open map[string]bool, now time.Time) (map[string]QuotaRecord, error)
	PruneQuotaFlushes(ctx context.Context, t time.Time) (int64, error)
}

// TreeTx are tree changes inside a write transaction of the store, for the
// drive's quota wiring (txops.go): each reports how it moved what the user
// is charged (finished bytes and metadata charge, charge.go) so the ledger
// can be told exactly that, and refuses growth
// beyond maxGrowth (NoGrowthLimit: none) with errs.Quota inside the
// transaction. Errors are those of the plain Tree methods; Tx classifies a
// failed commit like every method.
type TreeTx interface {
	// Tx runs fn in one write transaction: all of fn's changes or none.
	Tx(ctx context.Context, fn func(*Tx) error) error
	CommitFileTx(ctx context.Context, tx *Tx, uid int64, path string, f NewFile, maxGrowth int64) (Node, int64, error)
	CopyTx(ctx context.Context, tx *Tx, uid int64, src, dst string, overwrite, recursive bool, maxGrowth int64) (int64, error)
	MoveTx(ctx context.Context, tx *Tx, uid int64, src, dst string, overwrite bool) (int64, error)
	RemoveTx(ctx context.Context, tx *Tx, uid int64, path string) (int64, error)
	MkdirTx(ctx context.Context, tx *Tx, uid int64, path string, mtime time.Time, mode uint32, maxGrowth int64) (Node, int64, error)
	// SymlinkTx is Symlink inside tx; it returns the node and the change
	// of the user's charge (the target's length and the entry's charge).
	SymlinkTx(ctx context.Context, tx *Tx, uid int64, path, target string, mtime time.Time, maxGrowth int64) (Node, int64, error)
	PatchPropsTx(ctx context.Context, tx *Tx, nodeID int64, set, remove []Prop, maxGrowth int64) (int64, error)
	// SubtreeSize returns what the files and folders at or below path are
	// charged: the files' sizes and their metadata charge (charge.go).
	SubtreeSize(ctx context.Context, uid int64, path string) (int64, error)
	// TreeBytes returns the sum of the sizes of the files and links at or
	// below path: what a folder holds, as sync clients show it.
	TreeBytes(ctx context.Context, uid int64, path string) (int64, error)
}

// Tx is a write transaction of the store, valid while the function TreeTx.Tx
// (or a store's GroupTx) runs: the caller hands it to the *Tx methods, whose
// changes commit together or not at all. It is opaque: the statements, and
// the engine they run on, stay inside the store.
type Tx struct{ tx *sql.Tx }

// Store is the whole metadata contract: what the drive composes.
type Store interface {
	Close() error
	Users
	Tree
	TreeTx
	Props
	Checksums
	Chunks
	Sessions
	QuotaRecords
	WebSessions
	AppTokens
	LoginFlows
	NameSearch
	Versions
	Trash
	ACMECache
	Links
	SharesStore
}

func baseName(p string) string {
	if p == "/" {
		return "/"
	}
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
