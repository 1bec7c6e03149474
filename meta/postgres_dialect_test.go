package meta

import "testing"

// The adapter numbers plain placeholders in order, keeps numbered ones (a
// parameter used twice), and leaves question marks in literals alone.
func TestPgSQLPlaceholders(t *testing.T) {
	cases := []struct{ in, want string }{
		{`SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = $1 AND c = $2`},
		{`SELECT ?1, ?2 WHERE x = ?1 LIMIT ?12`, `SELECT $1, $2 WHERE x = $1 LIMIT $12`},
		{`SELECT '?' || ? FROM t`, `SELECT '?' || $1 FROM t`},
		{`SELECT ifnull(a, ?) FROM t WHERE name = ? COLLATE NOCASE`, `SELECT coalesce(a, $1) FROM t WHERE lower(name) = lower($2)`},
	}
	for _, c := range cases {
		if got := pgSQL(c.in).text; got != c.want {
			t.Errorf("pgSQL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
