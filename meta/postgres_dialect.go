package meta

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/stdlib"
)

// The store's SQL (sqlite.go, nodes.go, sessions.go, …) is written once, in
// what SQLite and PostgreSQL share; the PostgreSQL store runs the very same
// methods through a database/sql connector that adapts each statement to
// PostgreSQL on the way in. The differences are few and mechanical:
//
//   - placeholders: ? becomes $1, $2, … and ?NNN becomes $NNN;
//   - ifnull(a, b) is coalesce(a, b);
//   - `col = ? COLLATE NOCASE` is lower(col) = lower(?) (names are ASCII,
//     and the unique index is on lower(name));
//   - LastInsertId: PostgreSQL has none, so an INSERT into a table with an id
//     column gets RETURNING id, and the result reports the last id returned;
//   - booleans are stored as integers, as in SQLite (0/1 columns);
//   - a write transaction takes a transaction-scoped advisory lock first, so
//     write transactions run one at a time across every node, exactly as
//     they do on SQLite's single writer: the store's read-check-write
//     sequences (quota, parent exists, name free) stay correct without
//     serializable retries, which could replay the drive's own bookkeeping.
//
// New SQL in this package must stay in the shared subset (or be added here):
// metatest, run on both stores, is what catches a statement that is not.

// writeLockKey is the advisory lock every write transaction takes.
const writeLockKey = 0x6e6574646973_6b // "netdisk"

// migrateLockKey serialises schema migration across nodes starting together.
const migrateLockKey = writeLockKey + 1

// pgConnector hands out connections that adapt the store's SQL.
type pgConnector struct {
	inner  driver.Connector
	writer bool // write transactions take writeLockKey
}

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		conn.Close()
		return nil, errors.New("meta: pgx stdlib connector returned an unexpected connection type")
	}
	return &pgConn{c: sc, writer: c.writer}, nil
}

func (c pgConnector) Driver() driver.Driver { return c.inner.Driver() }

type pgConn struct {
	c      *stdlib.Conn
	writer bool
}

var (
	_ driver.ConnPrepareContext = (*pgConn)(nil)
	_ driver.ConnBeginTx        = (*pgConn)(nil)
	_ driver.ExecerContext      = (*pgConn)(nil)
	_ driver.QueryerContext     = (*pgConn)(nil)
	_ driver.NamedValueChecker  = (*pgConn)(nil)
	_ driver.SessionResetter    = (*pgConn)(nil)
	_ driver.Pinger             = (*pgConn)(nil)
)

func (p *pgConn) Prepare(q string) (driver.Stmt, error) {
	return p.c.Prepare(pgSQL(q).text)
}

func (p *pgConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return p.c.PrepareContext(ctx, pgSQL(q).text)
}

func (p *pgConn) Close() error { return p.c.Close() }

func (p *pgConn) Begin() (driver.Tx, error) {
	return p.BeginTx(context.Background(), driver.TxOptions{})
}

func (p *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := p.c.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if p.writer && !opts.ReadOnly {
		if _, err := p.c.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`,
			[]driver.NamedValue{{Ordinal: 1, Value: int64(writeLockKey)}}); err != nil {
			tx.Rollback()
			return nil, err
		}
	}
	return tx, nil
}

func (p *pgConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	s := pgSQL(q)
	if !s.returningID {
		return p.c.ExecContext(ctx, s.text, args)
	}
	rows, err := p.c.QueryContext(ctx, s.text, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var res insertResult
	dest := make([]driver.Value, 1)
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		res.rows++
		switch v := dest[0].(type) {
		case int64:
			res.id = v
		default:
			return nil, errors.New("meta: RETURNING id gave a non-integer")
		}
	}
	return res, nil
}

func (p *pgConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return p.c.QueryContext(ctx, pgSQL(q).text, args)
}

// CheckNamedValue stores booleans as the integers the schema holds.
func (p *pgConn) CheckNamedValue(nv *driver.NamedValue) error {
	if b, ok := nv.Value.(bool); ok {
		nv.Value = int64(0)
		if b {
			nv.Value = int64(1)
		}
		return nil
	}
	return p.c.CheckNamedValue(nv)
}

func (p *pgConn) ResetSession(ctx context.Context) error { return p.c.ResetSession(ctx) }
func (p *pgConn) Ping(ctx context.Context) error         { return p.c.Ping(ctx) }

type insertResult struct{ id, rows int64 }

func (r insertResult) LastInsertId() (int64, error) { return r.id, nil }
func (r insertResult) RowsAffected() (int64, error) { return r.rows, nil }

type pgStatement struct {
	text        string
	returningID bool
}

// pgCache holds each statement's adapted form: the store uses a few dozen
// distinct statements, adapted once each.
var pgCache sync.Map // string → pgStatement

var (
	nocaseRe   = regexp.MustCompile(`(\w+) = \? COLLATE NOCASE`)
	ifnullRe   = regexp.MustCompile(`\bifnull\(`)
	insertIDRe = regexp.MustCompile(`^\s*INSERT INTO (users|nodes|chunks|trash_items|file_versions|links|shares|user_groups)\b`)
)

// pgSQL adapts one statement of the shared subset to PostgreSQL.
func pgSQL(q string) pgStatement {
	if s, ok := pgCache.Load(q); ok {
		return s.(pgStatement)
	}
	t := nocaseRe.ReplaceAllString(q, "lower($1) = lower(?)")
	t = ifnullRe.ReplaceAllString(t, "coalesce(")
	var b strings.Builder
	n, quoted := 0, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case c == '?' && !quoted:
			// ?NNN (SQLite's numbered parameter) is $NNN; a bare ? is the
			// next number.
			j := i + 1
			for j < len(t) && t[j] >= '0' && t[j] <= '9' {
				j++
			}
			if j > i+1 {
				b.WriteString("$" + t[i+1:j])
				i = j - 1
				continue
			}
			n++
			b.WriteString("$" + strconv.Itoa(n))
		default:
			b.WriteByte(c)
		}
	}
	s := pgStatement{text: b.String()}
	if insertIDRe.MatchString(s.text) && !strings.Contains(strings.ToUpper(s.text), "RETURNING") {
		s.text += " RETURNING id"
		s.returningID = true
	}
	pgCache.Store(q, s)
	return s
}
