// Package metatest is the conformance suite every meta.Store runs, the SQLite
// and the PostgreSQL store alike, so callers may rely on the contract
// whichever engine holds the metadata. It checks the contract the
// interfaces in package meta document (results and error kinds), never an
// implementation's tables.
package metatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// Open returns a fresh, empty store whose clock is now (the store stamps
// folder times, chunk records and settlements with it).
type Open func(t *testing.T, now func() time.Time) meta.Store

// env is one store under test with its clock and helpers.
type env struct {
	t     *testing.T
	ctx   context.Context
	s     meta.Store
	clock *testutil.Clock
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, open Open) *env {
	c := testutil.NewClock(t0)
	s := open(t, c.Now)
	t.Cleanup(func() { s.Close() })
	return &env{t: t, ctx: context.Background(), s: s, clock: c}
}

func (e *env) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func wantKind(t *testing.T, what string, err error, k errs.Kind) {
	t.Helper()
	if !errs.Is(err, k) {
		t.Fatalf("%s: %v (kind %v), want kind %v", what, err, errs.KindOf(err), k)
	}
}

func (e *env) user(name string, quota int64) int64 {
	e.t.Helper()
	u, err := e.s.CreateUser(e.ctx, name, "hash-"+name, false, quota)
	e.must(err)
	return u.ID
}

func (e *env) stat(uid int64, p string) meta.Node {
	e.t.Helper()
	n, err := e.s.Stat(e.ctx, uid, p)
	e.must(err)
	return n
}

func (e *env) finished(uid int64) int64 {
	e.t.Helper()
	u, err := e.s.UserByID(e.ctx, uid)
	e.must(err)
	return u.Finished
}

func (e *env) unfinished(uid int64) int64 {
	e.t.Helper()
	u, err := e.s.UserByID(e.ctx, uid)
	e.must(err)
	return u.Unfinished
}

// chunk is a chunk record named by s (the store never reads chunk bytes).
func chunk(s string, size int64) meta.Chunk {
	return meta.Chunk{SHA256: "sha-" + s, MD5: "md5-" + s, Size: size}
}

// file is a version made of chunks.
func file(mtime time.Time, cs ...meta.Chunk) meta.NewFile {
	f := meta.NewFile{ModTime: mtime, Chunks: cs}
	for _, c := range cs {
		f.Size += c.Size
		f.FileHash += c.MD5
	}
	return f
}

func (e *env) commit(uid int64, p string, cs ...meta.Chunk) meta.Node {
	e.t.Helper()
	n, err := e.s.CommitFile(e.ctx, uid, p, file(e.clock.Now(), cs...))
	e.must(err)
	return n
}

func (e *env) mkdir(uid int64, p string) {
	e.t.Helper()
	_, err := e.s.Mkdir(e.ctx, uid, p, e.clock.Now())
	e.must(err)
}

func paths(ns []meta.Node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Path
	}
	return out
}

func same(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// Run runs the whole suite; each case gets a fresh store from open.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Users", testUsers},
		{"UserIDsNeverReused", testUserIDsNeverReused},
		{"LastAdmin", testLastAdmin},
		{"WebSessions", testWebSessions},
		{"AppTokens", testAppTokens},
		{"LoginFlows", testLoginFlows},
		{"Links", testLinks},
		{"TreeShape", testTreeShape},
		{"NodeByID", testNodeByID},
		{"CommitAndFinishedBytes", testCommit},
		{"FolderTimes", testFolderTimes},
		{"ReplacingHint", testReplacingHint},
		{"MoveCopyRemove", testMoveCopyRemove},
		{"Symlinks", testSymlinks},
		{"TreeTx", testTreeTx},
		{"GroupTx", testGroupTx},
		{"ListingsAndLimits", testListings},
		{"ListPages", testListPages},
		{"ModesAndTimes", testModes},
		{"Props", testProps},
		{"MetadataCharge", testCharge},
		{"Checksums", testChecksums},
		{"ChunksAndGC", testChunks},
		{"InlineChunks", testInlineChunks},
		{"OpenFile", testOpenFile},
		{"Sessions", testSessions},
		{"SessionChunks", testSessionChunks},
		{"SessionParts", testSessionParts},
		{"MergeSession", testMergeSession},
		{"MergeFreeName", testMergeFreeName},
		{"DropAndExpire", testDropAndExpire},
		{"Challenges", testChallenges},
		{"InstantUploadLookups", testLookups},
		{"OwnFileWithContent", testOwnFileWithContent},
		{"FileWithContentAt", testFileWithContentAt},
		{"QuotaFlushes", testQuotaFlushes},
		{"Stats", testStats},
		{"NameSearch", testNameSearch},
		{"VersionsOnCommit", testVersionsOnCommit},
		{"VersionsFollowTheFile", testVersionsFollowTheFile},
		{"VersionErrors", testVersionErrors},
		{"RestoreVersion", testRestoreVersion},
		{"VersionsAndGC", testVersionsAndGC},
		{"Trash", testTrash},
		{"TrashReplace", testTrashReplace},
		{"TrashLists", testTrashLists},
		{"TrashFoldsLeafFirst", testTrashFoldsLeafFirst},
		{"ACMECache", testACMECache},
		{"TreeSeq", testTreeSeq},
		{"Shares", testShares},
		{"Groups", testGroups},
		{"MultiByteFolders", testMultiByteFolders},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newEnv(t, open)) })
	}
}
