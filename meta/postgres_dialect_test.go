package meta

import "testing"

// The adaptations the PostgreSQL connector makes, statement by statement.
func TestPgSQL(t *testing.T) {
	cases := []struct {
		in, want string
		id       bool
	}{
		{`SELECT a FROM t WHERE x = ? AND y = ?`, `SELECT a FROM t WHERE x = $1 AND y = $2`, false},
		{`SELECT ?1, ?2, ?1 FROM t LIMIT ?3`, `SELECT $1, $2, $1 FROM t LIMIT $3`, false},
		{`SELECT '?' FROM t WHERE x = ?`, `SELECT '?' FROM t WHERE x = $1`, false},
		{`SELECT ifnull(a, '') FROM users WHERE name = ? COLLATE NOCASE`, `SELECT coalesce(a, '') FROM users WHERE lower(name) = lower($1)`, false},
		{`INSERT INTO nodes(a) VALUES (?)`, `INSERT INTO nodes(a) VALUES ($1) RETURNING id`, true},
		{`INSERT INTO chunks(a) VALUES (?) ON CONFLICT(sha256) DO NOTHING RETURNING id`, `INSERT INTO chunks(a) VALUES ($1) ON CONFLICT(sha256) DO NOTHING RETURNING id`, false},
		{`INSERT INTO props(a) VALUES (?)`, `INSERT INTO props(a) VALUES ($1)`, false},
	}
	for _, c := range cases {
		got := pgSQL(c.in)
		if got.text != c.want || got.returningID != c.id {
			t.Errorf("pgSQL(%q) = %q (returning id %v); want %q (%v)", c.in, got.text, got.returningID, c.want, c.id)
		}
	}
}
