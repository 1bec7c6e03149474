package meta

// Every SQLite connection the process opens gets the query planner
// stability guarantee (SQLITE_DBCONFIG_ENABLE_QPSG), through an automatic
// extension: SQLite runs it on each new connection, go-sqlite3's included,
// so no connection is opened without it.
//
// Why: without it, a statement whose plan SQLite thinks might depend on a
// bound value (an `x = ?` term a candidate plan does not index is enough,
// so nearly every statement here) is marked expired whenever its bindings
// are cleared, and go-sqlite3 clears them before every execution, whether
// the statement comes from its statement cache or from a prepared
// *sql.Stmt. Each execution then parsed and planned its SQL again: on a
// 4 KiB GET that was most of SQLite's share of the CPU (270 → 105 µs per
// GET with the guarantee). The plan is the one SQLite chooses knowing no
// values, which is the plan a statement's first execution gets anyway; no
// query here relies on a bound value to choose an index (no LIKE ?
// prefix, no partial index matched through a bound value: their
// conditions are literals).
//
// The SQLite library is the amalgamation go-sqlite3 compiles into the
// binary; its entry points are declared here because its header is not on
// this package's include path.

/*
#include <stdlib.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;
typedef struct sqlite3_api_routines sqlite3_api_routines;
extern int sqlite3_auto_extension(void (*xEntryPoint)(void));
extern int sqlite3_db_config(sqlite3*, int op, ...);
extern int sqlite3_open_v2(const char *filename, sqlite3 **ppDb, int flags, const char *zVfs);
extern int sqlite3_close(sqlite3*);
extern int sqlite3_prepare_v2(sqlite3 *db, const char *zSql, int nByte, sqlite3_stmt **ppStmt, const char **pzTail);
extern int sqlite3_bind_int64(sqlite3_stmt*, int, long long);
extern int sqlite3_bind_parameter_count(sqlite3_stmt*);
extern int sqlite3_step(sqlite3_stmt*);
extern int sqlite3_reset(sqlite3_stmt*);
extern int sqlite3_clear_bindings(sqlite3_stmt*);
extern int sqlite3_stmt_status(sqlite3_stmt*, int op, int resetFlg);
extern int sqlite3_finalize(sqlite3_stmt*);

enum {
	ND_DBCONFIG_ENABLE_QPSG = 1007, // SQLITE_DBCONFIG_ENABLE_QPSG
	ND_OPEN_READONLY = 0x00000001,  // SQLITE_OPEN_READONLY
	ND_STMTSTATUS_REPREPARE = 5,    // SQLITE_STMTSTATUS_REPREPARE
	ND_ROW = 100,
	ND_DONE = 101,
};

static int nd_qpsg(sqlite3 *db, char **err, const sqlite3_api_routines *api) {
	return sqlite3_db_config(db, ND_DBCONFIG_ENABLE_QPSG, 1, (int*)0);
}

static int nd_register_qpsg(void) {
	return sqlite3_auto_extension((void (*)(void))nd_qpsg);
}

// nd_reprepares opens path read-only as any connection is opened, runs sql
// `runs` times the way go-sqlite3 does (reset, clear the bindings, bind
// every parameter to arg, step to the end) and returns how many times
// SQLite prepared it again, or -1 when it could not run it.
static int nd_reprepares(const char *path, const char *sql, long long arg, int runs) {
	sqlite3 *db = 0;
	sqlite3_stmt *st = 0;
	int n = -1, i, p, rc;
	if (sqlite3_open_v2(path, &db, ND_OPEN_READONLY, 0) != 0) goto out;
	if (sqlite3_prepare_v2(db, sql, -1, &st, 0) != 0 || st == 0) goto out;
	for (i = 0; i < runs; i++) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		for (p = 1; p <= sqlite3_bind_parameter_count(st); p++) sqlite3_bind_int64(st, p, arg + i);
		while ((rc = sqlite3_step(st)) == ND_ROW) {}
		if (rc != ND_DONE) goto out;
	}
	n = sqlite3_stmt_status(st, ND_STMTSTATUS_REPREPARE, 0);
out:
	if (st) sqlite3_finalize(st);
	if (db) sqlite3_close(db);
	return n;
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

func init() {
	if rc := C.nd_register_qpsg(); rc != 0 {
		panic(fmt.Sprintf("meta: registering SQLite's planner setting failed (%d)", int(rc)))
	}
}

// reprepares runs query n times on a connection of its own to the SQLite
// file path, every parameter bound to arg+i on run i, and says how many
// times SQLite prepared it again (the tests' measure of the setting above).
func reprepares(path, query string, arg int64, n int) (int, error) {
	cp, cq := C.CString(path), C.CString(query)
	defer C.free(unsafe.Pointer(cp))
	defer C.free(unsafe.Pointer(cq))
	r := int(C.nd_reprepares(cp, cq, C.longlong(arg), C.int(n)))
	if r < 0 {
		return 0, fmt.Errorf("meta: running %q on %s failed", query, path)
	}
	return r, nil
}
