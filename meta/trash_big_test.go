package meta

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU time the process has used (every thread, user and
// system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillFolder puts a folder of n files, each with a chunk, under /big (in
// 100 subfolders), in one transaction straight into the tables.
func fillFolder(t testing.TB, s *SQLStore, uid int64, n int) {
	ctx := context.Background()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO chunks(sha256, md5, size, created_ns) VALUES ('s', 'm', 1, 0)`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (?, '/big', '/', 'big', 1, 0)`, uid); err != nil {
			return err
		}
		for d := range 100 {
			dir := fmt.Sprintf("/big/d%03d", d)
			if _, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (?, ?, '/big', ?, 1, 0)`, uid, dir, filepath.Base(dir)); err != nil {
				return err
			}
		}
		for i := range n {
			dir := fmt.Sprintf("/big/d%03d", i%100)
			p := fmt.Sprintf("%s/file-%06d.txt", dir, i)
			res, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, size, mtime_ns, file_hash) VALUES (?,?,?,?,0,1,0,'h')`, uid, p, dir, filepath.Base(p))
			if err != nil {
				return err
			}
			id, _ := res.LastInsertId()
			if _, err := tx.ExecContext(ctx, `INSERT INTO file_chunks(node_id, idx, chunk_id) VALUES (?, 0, 1)`, id); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET use_space_finished = ? WHERE id = ?`, n, uid)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Deleting a folder of 100,000 files to the trash and restoring it are each
// one transaction of a few statements whose cost is one pass over the
// subtree's index range, not one statement per file.
func TestTrash100kFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a 100,000-file folder")
	}
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.CreateUser(ctx, "u", "x", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	fillFolder(t, s, u.ID, n)
	// A move of the folder is the yardstick: one UPDATE of the subtree's
	// paths, what the trash promises a delete and a restore cost.
	cpu0 := cpuTime()
	if err := s.Move(ctx, u.ID, "/big", "/moved", false); err != nil {
		t.Fatal(err)
	}
	moveCPU := cpuTime() - cpu0
	before := writeTxs.Load()
	start := time.Now()
	cpu0 = cpuTime()
	if err := s.Remove(ctx, u.ID, "/moved"); err != nil {
		t.Fatal(err)
	}
	del, delCPU := time.Since(start), cpuTime()-cpu0
	if txs := writeTxs.Load() - before; txs != 1 {
		t.Fatalf("the delete took %d write transactions, want 1", txs)
	}
	its, err := s.ListTrash(ctx, u.ID, 0, 10)
	if err != nil || len(its) != 1 || its[0].Size != n {
		t.Fatalf("trash: %+v %v", its, err)
	}
	// The restore is timed as the drive runs it: the item's cost sizes the
	// quota hold first.
	start, cpu0 = time.Now(), cpuTime()
	if _, err := s.TrashCost(ctx, u.ID, its[0].ID); err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		_, _, err := s.RestoreTrashTx(ctx, tx, u.ID, its[0].ID, NoGrowthLimit)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res, resCPU := time.Since(start), cpuTime()-cpu0
	if c, err := s.CountTree(ctx, u.ID, "/moved", 2*n); err != nil || c != n+100 {
		t.Fatalf("restored %d nodes, %v", c, err)
	}
	t.Logf("100,000-file folder: move CPU %v; delete %v (CPU %v), restore %v (CPU %v)", moveCPU, del, delCPU, res, resCPU)
	// The product's bound is < 1 s each (measured on an idle machine:
	// docs/benchmarks.md); here, on a machine shared with other work, the
	// check is against the move, in the same conditions: a delete or a
	// restore that touched the rows one by one would cost many moves.
	if delCPU > 2*moveCPU || resCPU > 2*moveCPU {
		t.Fatalf("delete took %v of CPU, restore %v, a move of the same folder %v: want each within twice the move", delCPU, resCPU, moveCPU)
	}
}
