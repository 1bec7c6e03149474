package testutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgBinDir is where Debian's postgresql package puts the server programs;
// they are not on PATH.
const pgBinDir = "/usr/lib/postgresql/15/bin"

// Postgres is a private PostgreSQL cluster: a fresh initdb in a temp dir,
// listening on a free loopback port and a unix socket inside that dir, with
// fsync off (a test cluster need not survive power loss). Each test gets its
// own database from NewDatabase.
type Postgres struct {
	Addr string // 127.0.0.1:PORT
	dir  string
	cred *syscall.Credential
	proc *proc
	dbs  atomic.Int64
}

var sharedPG = shared[*Postgres]{launch: LaunchPostgres}

// SharedPostgres returns the package test run's cluster, starting it on
// first use: one cluster per test binary, however many tests use it. The
// test binary's TestMain stops it (Main). A missing PostgreSQL skips the
// test locally and fails it under CI.
func SharedPostgres(t testing.TB) *Postgres {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBinDir, "initdb")); err != nil {
		if InCI() {
			t.Fatalf("PostgreSQL 15 is required under CI but %s/initdb is missing (see .ci/run)", pgBinDir)
		}
		t.Skipf("PostgreSQL 15 not installed (%s)", pgBinDir)
	}
	p, err := sharedPG.get()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// StartPostgres starts a private cluster for a test that restarts it
// (Down, Up); it is stopped at cleanup. Skips and failures as SharedPostgres.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBinDir, "initdb")); err != nil {
		if InCI() {
			t.Fatalf("PostgreSQL 15 is required under CI but %s/initdb is missing (see .ci/run)", pgBinDir)
		}
		t.Skipf("PostgreSQL 15 not installed (%s)", pgBinDir)
	}
	p, err := LaunchPostgres()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Down stops the server with a fast shutdown (SIGINT: every session is
// ended with "terminating connection due to administrator command",
// SQLSTATE 57P01, as an operator's restart does) and waits for it; its
// address then refuses connections until Up.
func (p *Postgres) Down() { p.proc.kill(syscall.SIGINT) }

// Up starts a server that is Down again, on the same address and data.
func (p *Postgres) Up(t testing.TB) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = p.start(p.Addr, filepath.Join(p.dir, "data"), p.cred); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the port may linger a moment
	}
	t.Fatalf("restart postgres: %v", err)
}

// LaunchPostgres initialises and starts a cluster; the caller stops it
// (Stop). initdb and postgres refuse to run as root, so as root they run as
// the postgres user, in a directory it owns.
func LaunchPostgres() (*Postgres, error) {
	dir, err := os.MkdirTemp("", "netdisk-pg-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{dir: dir}
	cred, err := pgCredential(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.cred = cred
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(pgBinDir, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--locale=C", "--encoding=UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := onFreePort(func(addr string) error { return p.start(addr, data, cred) }); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	return p, nil
}

func pgCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres user to run the server: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (p *Postgres) start(addr, data string, cred *syscall.Credential) error {
	p.Addr = addr
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(filepath.Join(pgBinDir, "postgres"), "-D", data, "-p", port, "-k", p.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	// The server dies with the test binary, even when that is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
	pr, err := startProc("postgres", cmd, nil)
	if err != nil {
		return err
	}
	// SIGQUIT: immediate shutdown; the data dir is thrown away anyway.
	pr.halt = func(p *proc) { p.kill(syscall.SIGQUIT) }
	p.proc = pr
	return pr.waitReady(context.Background(), 30*time.Second, 20*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, p.url("postgres"))
		if err != nil {
			return err
		}
		return c.Close(ctx)
	})
}

func (p *Postgres) url(db string) string {
	return "postgres://postgres@" + p.Addr + "/" + db + "?sslmode=disable"
}

// NewDatabase creates an empty database and returns its URL.
func (p *Postgres) NewDatabase(t testing.TB) string {
	t.Helper()
	url, err := p.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// CreateDatabase creates an empty database and returns its URL (for programs
// such as the benchmarks; tests use NewDatabase).
func (p *Postgres) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("db%d", p.dbs.Add(1))
	c, err := pgx.Connect(ctx, p.url("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	// template0 with no WAL-logged copy: the fastest way to an empty database.
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 STRATEGY file_copy"); err != nil {
		return "", fmt.Errorf("create database: %w", err)
	}
	return p.url(name), nil
}

// Stop shuts the server down and removes its directory.
func (p *Postgres) Stop() {
	p.proc.end()
	os.RemoveAll(p.dir)
}
