package meta

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed pgmigrations/*.sql
var pgMigrations embed.FS

// Postgres is the Store on a PostgreSQL database, shared by every node of a
// scaled-out deployment. It is an SQLStore over PostgreSQL connections that
// adapt the shared SQL (postgres_dialect.go); only opening, the schema and
// error classification differ.
type Postgres struct {
	*SQLStore
}

var _ Store = (*Postgres)(nil)

// IsPostgresURL reports whether a --meta value names a PostgreSQL database.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// OpenPostgres connects to the database at url (postgres://user:pass@host/db)
// and applies pending migrations under an advisory lock, so nodes starting
// together migrate once and the others wait, then find nothing to do.
func OpenPostgres(ctx context.Context, url string, now func() time.Time) (*Postgres, error) {
	if now == nil {
		now = time.Now
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("meta: postgres URL: %w", err)
	}
	w := sql.OpenDB(pgConnector{inner: stdlib.GetConnector(*cfg), writer: true})
	r := sql.OpenDB(pgConnector{inner: stdlib.GetConnector(*cfg)})
	// Write transactions queue on the advisory lock in the server; a few
	// connections let the statements outside them (and the queue) proceed.
	w.SetMaxOpenConns(8)
	w.SetMaxIdleConns(8)
	r.SetMaxOpenConns(16)
	r.SetMaxIdleConns(16)
	// Point queries keep their cancellation (detachPointReads false): each
	// is a round trip to the server.
	p := &Postgres{SQLStore: &SQLStore{w: w, r: r, now: now, pgSearch: true}}
	if err := p.migrate(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Postgres) migrate(ctx context.Context) error {
	conn, err := p.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("meta: postgres: %w", err)
	}
	defer conn.Close()
	// A session lock on this one connection: held across the migrations'
	// transactions, released when it is returned (or the node dies).
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(?)`, int64(migrateLockKey)); err != nil {
		return fmt.Errorf("meta: postgres: migration lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(?)`, int64(migrateLockKey))
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_ns BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("meta: migrate: %w", err)
	}
	return migrationSet{
		files: pgMigrations,
		glob:  "pgmigrations/*.sql",
		db:    conn,
		inTx: func(ctx context.Context, _ string, fn func(*sql.Tx) error) error {
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if err := fn(tx); err != nil {
				tx.Rollback()
				return err
			}
			return tx.Commit()
		},
		// The driver runs one statement per call.
		exec: func(ctx context.Context, tx *sql.Tx, body string) error {
			for _, stmt := range splitSQL(body) {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			return nil
		},
		after: pgPostMigration,
		now:   p.now,
	}.applyPending(ctx)
}

// pgPostMigration is postMigration (sqlite.go) for the PostgreSQL schema:
// the same Go fills, run after the migration that matches SQLite's, in its
// transaction.
var pgPostMigration = map[string]func(context.Context, *sql.Tx) error{
	"pgmigrations/002_instant_draws.sql": drawExisting,
}

// splitSQL cuts a migration file into statements at semicolons ending a
// line outside a $$-quoted function body; the files hold no literals that
// would contain one.
func splitSQL(body string) []string {
	var out []string
	var cur strings.Builder
	inBody := false
	for _, line := range strings.Split(body, "\n") {
		if strings.Count(line, "$$")%2 == 1 {
			inBody = !inBody
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") && !inBody {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
