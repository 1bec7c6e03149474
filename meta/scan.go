package meta

import "database/sql"

// rowScanner is a row to read: *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(...any) error }

// scanAll reads every row of a query with scan and closes rows. It takes the
// query's error too, so a call reads rows, err := q(…); out, err :=
// scanAll(rows, err, scanX), with one error to wrap for the query, a row
// and the iteration alike.
func scanAll[T any](rows *sql.Rows, err error, scan func(rowScanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// scanString reads a row of one text column.
func scanString(r rowScanner) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}
