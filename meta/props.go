package meta

import (
	"context"
	"database/sql"
	"fmt"

	"netdisk/errs"
)

// Bounds on WebDAV dead properties. They are free text a client may send
// without limit (PROPPATCH), stored in the database, where nothing else
// bounds them: without these a user could grow the database by gigabytes
// with no file at all. A property's bytes are those of its namespace, name,
// language and value (its inner XML).
const (
	// MaxPropBytes bounds one property.
	MaxPropBytes = 64 << 10
	// MaxPropsPerNode bounds how many properties one file or folder has.
	MaxPropsPerNode = 128
	// MaxPropBytesPerNode bounds the bytes of all the properties of one
	// file or folder.
	MaxPropBytesPerNode = 256 << 10
)

// Bytes is what the property costs to keep (see MaxPropBytes).
func (p Prop) Bytes() int64 {
	return int64(len(p.Space) + len(p.Local) + len(p.Lang) + len(p.InnerXML))
}

// propBytesSQL sums the bytes of the props rows it is applied to.
const propBytesSQL = `ifnull(sum(octet_length(ns) + octet_length(name) + octet_length(lang) + octet_length(value)), 0)`

// checkPropBounds refuses (errs.TooLarge) a patch that left node nodeID with
// more properties, or more property bytes, than a node may have; the
// caller's transaction is then rolled back.
func checkPropBounds(ctx context.Context, tx *sql.Tx, op string, nodeID int64) error {
	var count, bytes int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), `+propBytesSQL+` FROM props WHERE node_id = ?`, nodeID).Scan(&count, &bytes); err != nil {
		return err
	}
	switch {
	case count > MaxPropsPerNode:
		return errs.E(op, errs.TooLarge, "", fmt.Errorf("%d properties, at most %d are kept per file or folder", count, MaxPropsPerNode))
	case bytes > MaxPropBytesPerNode:
		return errs.E(op, errs.TooLarge, "", fmt.Errorf("%d bytes of properties, at most %d are kept per file or folder", bytes, MaxPropBytesPerNode))
	}
	return nil
}
