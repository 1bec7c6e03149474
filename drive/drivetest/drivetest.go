// Package drivetest builds the in-process drive tests run against: real SQLite
// and a real chunk directory in a temp dir, the quota guard over the embedded
// ledger (or a real Redis), opened by drive.OpenLocal exactly as
// `netdisk serve` opens its data directory, and reconciled. It is the one
// constructor for tests that need a Drive without a daemon process (drive,
// dav, server, upload); tests of the whole daemon start the binary
// (testutil.StartDaemon).
//
// It imports neither upload nor any HTTP layer, so package-internal tests of
// those packages can use it; upload tests wire their service on top.
package drivetest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"

	"netdisk/drive"
	"netdisk/meta"
	"netdisk/quota"
	"netdisk/testutil"
)

// Options choose what differs between tests; the zero value is the daemon's
// wiring with the production chunk size and the system clock.
type Options struct {
	ChunkSize int64           // 0: the production chunk size
	Clock     *testutil.Clock // the clock of the metadata store, drive, locks and ledger; nil: system time
	Redis     *redis.Client   // the quota ledger's Redis; nil: the embedded ledger
	Logger    *slog.Logger    // nil: discarded
	// SharedMeta opens the drive as one node of several on its store
	// (drive.Config.SharedMeta), though the store is a SQLite file.
	SharedMeta bool
	// History sets the history's bounds (drive.Config TrashRetention,
	// HistoryShare, Volume); nil: the defaults.
	History func(*drive.Config)
}

// Env is an opened drive. Its stores close at test cleanup.
type Env struct {
	*drive.Local
	Dir   string          // the data directory (meta.db, chunks/)
	Clock *testutil.Clock // Options.Clock
}

// New opens a drive in a fresh temp dir and reconciles its ledger (there is
// no upload session yet: upload tests set the drive's open sessions as the
// ledger's truth with Local.Reconcile).
func New(t testing.TB, o Options) *Env {
	t.Helper()
	ctx := context.Background()
	c := drive.Config{ChunkSize: o.ChunkSize, Logger: o.Logger, SharedMeta: o.SharedMeta}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Clock != nil {
		c.Now = o.Clock.Now
	}
	if o.History != nil {
		o.History(&c)
	}
	var ledger func(quota.Config) quota.Ledger
	if o.Redis != nil {
		ledger = func(cfg quota.Config) quota.Ledger { return quota.NewRedis(o.Redis, "", cfg) }
	}
	dir := t.TempDir()
	l, err := drive.OpenLocal(ctx, drive.LocalConfig{Config: c, Dir: dir, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return &Env{Local: l, Dir: dir, Clock: o.Clock}
}

// Password is the password AddUser gives a user.
func Password(name string) string { return "pw-" + name }

// AddUser creates a user with password Password(name) and the given quota
// (0: unlimited). The password is hashed at bcrypt's minimum cost: every
// login a test makes is a real bcrypt comparison, and at the default cost
// under -race on a shared machine login-heavy tests take minutes.
func (e *Env) AddUser(t testing.TB, name string, quota int64) meta.User {
	t.Helper()
	if err := drive.ValidUserName(name); err != nil {
		t.Fatal(err)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(Password(name)), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Meta.CreateUser(context.Background(), name, string(h), false, quota)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
