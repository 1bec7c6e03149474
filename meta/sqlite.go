package meta

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"netdisk/errs"
	"netdisk/internal/crashpoint"
)

//go:embed migrations/*.sql
var migrations embed.FS

// SQLStore is the Store on a SQL database: one set of methods and one SQL
// text, the dialect chosen when the store is opened. OpenSQLite opens it on
// a SQLite file in WAL mode; OpenPostgres on a PostgreSQL database shared
// by several nodes, through connections that adapt the SQL
// (postgres_dialect.go). What else the engines do differently is set when
// the store is opened, in fields (warm, detachPointReads), not decided in
// the methods.
//
// Writes go through the writer pool, reads through a pool beside it. On
// SQLite the writer is one connection (SQLite has one writer anyway;
// queuing in Go beats busy retries); on PostgreSQL its transactions queue
// on an advisory lock in the server, so nodes write one at a time.
type SQLStore struct {
	w   *sql.DB // the writer
	r   *sql.DB // readers
	now func() time.Time

	group groupCommit // GroupTx's queue (group.go)

	// warm lets a read go through the writer's connection while no write
	// transaction runs or waits (writing == 0): every commit empties the
	// page cache of the reader connections, so their next query reads its
	// pages again, while the writer's cache holds what it just wrote. Only
	// SQLite's single writer: the connection is free or serves a
	// transaction, which the read then waits for (committed data only).
	warm    bool
	writing atomic.Int32

	// detachPointReads: the engine's point queries cannot block, so they
	// run without ctx's cancellation (pointQuery). Only SQLite in WAL mode.
	detachPointReads bool

	// pgSearch: name search looks names up through PostgreSQL's trigram
	// index with LIKE, not SQLite's full-text table (search.go).
	pgSearch bool
	// searchProbe and searchScan are probeCap and scanBudget (search.go);
	// tests lower them to reach every way to a page with a handful of nodes.
	searchProbe, searchScan int
}

// reader is the pool a short read on the write path (a PUT's look-up of
// its file and parent) goes through: the idle writer, else the readers.
func (s *SQLStore) reader() *sql.DB {
	if s.warm && s.writing.Load() == 0 {
		return s.w
	}
	return s.r
}

var _ Store = (*SQLStore)(nil)

// readers is the size of SQLite's pool of reader connections.
const readers = 8

// OpenSQLite opens or creates the database file and applies pending migrations.
func OpenSQLite(ctx context.Context, path string, now func() time.Time) (*SQLStore, error) {
	if now == nil {
		now = time.Now
	}
	// synchronous=FULL: a commit is on disk when it returns, so an acknowledged
	// upload survives power loss, not only a process crash.
	// _stmt_cache_size: each connection keeps its recently used statements
	// prepared, so the few statements a small upload runs are parsed once
	// per connection, not once per request.
	// _recursive_triggers: a folder's tree_seq bump fires the trigger that
	// bumps its parent (migrations/024_tree_etag.sql), up to the root.
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000&_foreign_keys=on&_stmt_cache_size=48&_recursive_triggers=1"
	// The writer's page cache (_cache_size, KiB when negative) holds what
	// a change of a large subtree rewrites: a folder of 100,000 files
	// moved or sent to the trash rewrites every row's path in two indexes,
	// which SQLite's default 2 MiB cache turns into several times the I/O.
	// Pages are taken only as used.
	w, err := sql.Open("sqlite3", dsn+"&_txlock=immediate&_cache_size=-65536")
	if err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite3", dsn+"&mode=ro")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("meta: open %s: %w", path, err)
	}
	// Every reader connection stays open once made: database/sql keeps
	// two idle by default and closes the rest as each query ends, so
	// under more than two concurrent reads (parallel GETs) most queries
	// opened a connection, which reads the schema and starts with an
	// empty page cache, a cost many times the query's.
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	s := &SQLStore{w: w, r: r, now: now, warm: true, detachPointReads: true, searchProbe: probeCap, searchScan: scanBudget}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Close closes both pools.
func (s *SQLStore) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

func (s *SQLStore) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_ns INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("meta: migrate: %w", err)
	}
	for old, name := range renamedMigrations {
		// A database migrated before the rename recorded the old name: the
		// migration is applied, under its new name.
		if _, err := s.w.ExecContext(ctx, `UPDATE schema_migrations SET name = ? WHERE name = ?
			AND NOT EXISTS (SELECT 1 FROM schema_migrations WHERE name = ?)`, name, old, name); err != nil {
			return fmt.Errorf("meta: migrate: %w", err)
		}
	}
	return migrationSet{
		files: migrations,
		glob:  "migrations/*.sql",
		db:    s.w,
		before: map[string]func(context.Context) error{
			"migrations/005_users_name_nocase.sql": func(ctx context.Context) error { return checkNameCase(ctx, s.w) },
		},
		inTx: func(ctx context.Context, name string, fn func(*sql.Tx) error) error {
			if rebuildMigrations[name] {
				return s.txWithoutForeignKeys(ctx, fn)
			}
			return s.tx(ctx, fn)
		},
		exec: func(ctx context.Context, tx *sql.Tx, body string) error {
			_, err := tx.ExecContext(ctx, body)
			return err
		},
		after: postMigration,
		now:   s.now,
	}.applyPending(ctx)
}

// renamedMigrations maps the names migrations were recorded under to their
// names now. Migrations are recorded by file name; the upload sessions were
// the second 002 (after 002_quota, in name order) until they became 003.
var renamedMigrations = map[string]string{
	"migrations/002_upload_sessions.sql": "migrations/003_upload_sessions.sql",
}

// postMigration holds data changes SQL cannot make (crypto/rand draws) that
// run right after a migration, in its transaction.
var postMigration = map[string]func(context.Context, *sql.Tx) error{
	"migrations/007_instant_draws.sql": drawExisting,
}

// rebuildMigrations rebuild a table others refer to (SQLite cannot alter a
// column's definition): they run with foreign keys off, since dropping the
// old table would otherwise cascade into its children, and the references
// are checked before the commit.
var rebuildMigrations = map[string]bool{
	"migrations/010_users_autoincrement.sql": true,
}

// txWithoutForeignKeys runs fn in a write transaction on one connection
// whose foreign keys are off (the pragma is a no-op inside a transaction, so
// it is set before), fails it if any reference is left dangling, and turns
// them on again.
func (s *SQLStore) txWithoutForeignKeys(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return err
	}
	// The writer's other work expects them on; a connection that cannot be
	// set back is not returned to the pool.
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	writeTxs.Add(1)
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("meta: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	var dangling int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&dangling); err != nil {
		tx.Rollback()
		return err
	}
	if dangling > 0 {
		tx.Rollback()
		return fmt.Errorf("%d rows would refer to missing rows", dangling)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("meta: commit: %w", err)
	}
	return nil
}

// checkNameCase refuses to make names unique without regard to case while
// two users' names differ only in case: which one is the real account is the
// operator's decision, so the daemon stops and names them.
func checkNameCase(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT group_concat(name, ', ') FROM users GROUP BY name COLLATE NOCASE HAVING count(*) > 1 ORDER BY 1`)
	dups, err := scanAll(rows, err, scanString)
	if err != nil {
		return err
	}
	if len(dups) > 0 {
		return fmt.Errorf("user names are now unique without regard to case, but these users differ only in case: %s; "+
			"rename or delete all but one of each group (e.g. with the previous netdisk version, or sqlite3 meta.db \"UPDATE users SET name='alice2' WHERE name='ALICE'\") and start again",
			strings.Join(dups, "; "))
	}
	return nil
}

// writeTxs counts write transactions begun through tx (benchmarks report
// SQLite writes per uploaded chunk from it).
var writeTxs atomic.Int64

// WriteTxCount returns how many write transactions this process has begun
// through Tx (and the store's own transactional writes).
func WriteTxCount() int64 { return writeTxs.Load() }

// pointQuery is ctx for a query that reads a few pages and returns at once
// (a look-up by key). database/sql watches a cancellable context with a
// goroutine of its own for every query, and starting it wakes another
// thread, a cost larger than the query's. On SQLite such a query cannot
// block (WAL readers never wait for the writer), so cancelling it would gain
// nothing and the engine drops it (detachPointReads; the caller checks ctx
// before). On PostgreSQL the query is a network round trip that can wait on
// the server or the network: it keeps its cancellation.
func (s *SQLStore) pointQuery(ctx context.Context) context.Context {
	if s.detachPointReads {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE through _txlock).
func (s *SQLStore) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	writeTxs.Add(1)
	s.writing.Add(1)
	defer s.writing.Add(-1)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("meta: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("meta: commit: %w", err)
	}
	crashpoint.Synced()
	return nil
}

// Tx runs fn in a write transaction of the shared writer, for the drive's
// quota wiring: it combines the tree changes inside a Tx (txops.go) with its own
// bookkeeping in one commit. An error fn returns with a kind keeps it; a
// database error is classified as every method's (errors.go).
func (s *SQLStore) Tx(ctx context.Context, fn func(*Tx) error) error {
	return wrap("meta.Tx", "", s.tx(ctx, func(tx *sql.Tx) error { return fn(&Tx{tx}) }))
}

// ---- users

const userCols = `id, name, pass_hash, is_admin, quota_total, use_space_finished, use_space_unfinished, use_space_meta, created_ns`

func scanUser(row rowScanner) (User, error) {
	var u User
	var created int64
	err := row.Scan(&u.ID, &u.Name, &u.PassHash, &u.IsAdmin, &u.QuotaTotal, &u.Finished, &u.Unfinished, &u.Meta, &created)
	u.Created = time.Unix(0, created)
	return u, err
}

// CreateUser inserts a user and its root directory.
func (s *SQLStore) CreateUser(ctx context.Context, name, passHash string, isAdmin bool, quota int64) (User, error) {
	const op = "meta.CreateUser"
	var u User
	err := s.tx(ctx, func(tx *sql.Tx) error {
		now := s.now().UnixNano()
		res, err := tx.ExecContext(ctx, `INSERT INTO users(name, pass_hash, is_admin, quota_total, created_ns) VALUES (?,?,?,?,?)`,
			name, passHash, isAdmin, quota, now)
		if isUnique(err) {
			return errs.E(op, errs.Exists, "", fmt.Errorf("user %q exists", name))
		}
		if err != nil {
			return err
		}
		id, _ := res.LastInsertId()
		if _, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (?, '/', '', '', 1, ?)`, id, now); err != nil {
			return err
		}
		u, err = scanUser(tx.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE id = ?`, id))
		return err
	})
	if err != nil {
		return User{}, wrap(op, "", err)
	}
	return u, nil
}

func (s *SQLStore) userWhere(ctx context.Context, op, where string, arg any) (User, error) {
	u, err := scanUser(s.r.QueryRowContext(ctx, `SELECT `+userCols+` FROM users WHERE `+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, errs.E(op, errs.NotFound, "", fmt.Errorf("no such user"))
	}
	return u, wrap(op, "", err)
}

// UserByName looks a user up by login name, ignoring case.
func (s *SQLStore) UserByName(ctx context.Context, name string) (User, error) {
	// Case-insensitively: names are unique without regard to case (migration
	// 005), so ALICE signs in as alice.
	return s.userWhere(ctx, "meta.UserByName", "name = ? COLLATE NOCASE", name)
}

// UserByID looks a user up by id.
func (s *SQLStore) UserByID(ctx context.Context, id int64) (User, error) {
	return s.userWhere(ctx, "meta.UserByID", "id = ?", id)
}

// ListUsers returns every user, by name.
func (s *SQLStore) ListUsers(ctx context.Context) ([]User, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+userCols+` FROM users ORDER BY name`)
	out, err := scanAll(rows, err, scanUser)
	return out, wrap("meta.ListUsers", "", err)
}

// DeleteUser removes a user with their whole tree, upload sessions and web
// sessions (foreign keys cascade); their chunks become garbage unless
// someone else references them. The id is never given again (migration 010).
func (s *SQLStore) DeleteUser(ctx context.Context, id int64) error {
	return s.execOne(ctx, "meta.DeleteUser", `DELETE FROM users WHERE id = ?`, id)
}

// DeleteUserKeepingAdmin is DeleteUser unless id is the last admin. The
// check and the delete share one write transaction, and write transactions
// run one at a time (SQLite's single writer; on PostgreSQL the advisory lock
// every write transaction takes first, postgres_dialect.go), so two nodes
// removing the last two admins at once cannot both see the other remain.
func (s *SQLStore) DeleteUserKeepingAdmin(ctx context.Context, id int64) error {
	const op = "meta.DeleteUser"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var admin bool
		err := tx.QueryRowContext(ctx, `SELECT is_admin FROM users WHERE id = ?`, id).Scan(&admin)
		if errors.Is(err, sql.ErrNoRows) {
			return errs.E(op, errs.NotFound, "", errors.New("no such user"))
		}
		if err != nil {
			return err
		}
		if admin {
			var others int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE is_admin <> 0 AND id <> ?`, id).Scan(&others); err != nil {
				return err
			}
			if others == 0 {
				return errs.E(op, errs.Conflict, "", ErrLastAdmin)
			}
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM users WHERE id = ?`, id)
		return err
	})
	return wrap(op, "", err)
}

// SetPassword replaces a user's password hash and ends their web sessions,
// in one transaction.
func (s *SQLStore) SetPassword(ctx context.Context, id int64, passHash string) error {
	const op = "meta.SetPassword"
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE users SET pass_hash = ? WHERE id = ?`, passHash, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.E(op, errs.NotFound, "", errors.New("no such user"))
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM web_sessions WHERE user_id = ?`, id)
		return err
	})
	return wrap(op, "", err)
}

// SetQuota sets a user's total (0 = unlimited).
func (s *SQLStore) SetQuota(ctx context.Context, id int64, total int64) error {
	return s.execOne(ctx, "meta.SetQuota", `UPDATE users SET quota_total = ? WHERE id = ?`, total, id)
}

func (s *SQLStore) execOne(ctx context.Context, op, q string, args ...any) error {
	res, err := s.w.ExecContext(ctx, q, args...)
	if err != nil {
		return wrap(op, "", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errs.E(op, errs.NotFound, "", errors.New("no such user"))
	}
	return nil
}
