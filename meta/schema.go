package meta

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"time"
)

// migrationSet is one engine's schema history and how that engine applies a
// file; applyPending is the one loop both engines run over it.
type migrationSet struct {
	files embed.FS
	glob  string // the files, applied in name order, recorded by name
	// db reads schema_migrations: the writer pool, or the one connection
	// that holds PostgreSQL's migration lock.
	db interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	// before, when set, runs before the named file is applied, to explain
	// in the operator's terms why it cannot be.
	before map[string]func(context.Context) error
	// inTx runs fn in a transaction it commits when fn succeeds.
	inTx func(ctx context.Context, name string, fn func(*sql.Tx) error) error
	// exec runs a file's body in the transaction.
	exec func(ctx context.Context, tx *sql.Tx, body string) error
	// after holds data changes SQL cannot make (crypto/rand draws), run
	// right after the named file, in its transaction.
	after map[string]func(context.Context, *sql.Tx) error
	now   func() time.Time
}

// applyPending applies, in name order, every file not yet recorded in
// schema_migrations, each in one transaction with its record, so a crash
// leaves a file either applied and recorded or neither.
func (m migrationSet) applyPending(ctx context.Context) error {
	names, err := fs.Glob(m.files, m.glob)
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		var n int
		if err := m.db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
			return fmt.Errorf("meta: migrate: %w", err)
		}
		if n > 0 {
			continue
		}
		body, err := m.files.ReadFile(name)
		if err != nil {
			return err
		}
		if check := m.before[name]; check != nil {
			if err := check(ctx); err != nil {
				return fmt.Errorf("meta: migration %s: %w", name, err)
			}
		}
		err = m.inTx(ctx, name, func(tx *sql.Tx) error {
			if err := m.exec(ctx, tx, string(body)); err != nil {
				return err
			}
			if fill := m.after[name]; fill != nil {
				if err := fill(ctx, tx); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(name, applied_ns) VALUES (?, ?)`, name, m.now().UnixNano())
			return err
		})
		if err != nil {
			return fmt.Errorf("meta: migration %s: %w", name, err)
		}
	}
	return nil
}
