package drive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"netdisk/dedup"
	"netdisk/meta"
	"netdisk/quota"
)

// MigrateConfig names a single-node drive and the shared stores it moves to.
type MigrateConfig struct {
	DataDir string // the single-node data directory (meta.db, chunks/); its daemon stopped
	ToMeta  string // postgres://…, an empty database (or one holding this copy)
	ToBlobs string // s3://BUCKET[/PREFIX]?endpoint=…&region=…

	// Progress, when set, is told the chunk copy's figures every 100
	// chunks copied, and the phases' results as they end.
	Progress func(MigrateReport)
}

// MigrateChunks counts the chunk copy: copied (and their bytes), already in
// the bucket, and kept inline in the metadata (they go with it).
type MigrateChunks struct {
	Copied, Present, Inline, Bytes int64
}

// MigrateReport says how far Migrate went and what it found. A phase's
// field is set once the phase has ended.
type MigrateReport struct {
	Chunks     MigrateChunks
	ChunksDone bool
	Meta       *meta.CopyResult
	Stats      *meta.Stats // the copy's figures, equal to the source's
	Fsck       *FsckResult // every chunk of the copy read back from the bucket
}

// Migrate copies a single-node drive (SQLite + chunk directory) to
// PostgreSQL + S3, for running several nodes, and checks the copy. The
// source is only read.
//
// Chunks go first, each verified against its SHA-256 on the way; chunks
// already in the bucket are skipped, so an interrupted migration resumes
// where it stopped. The metadata is then copied in one transaction into the
// empty database (meta.SQLStore.CopyTo: an interrupted copy leaves it empty).
// Last the copy is checked as the nodes will see it: its figures against the
// source's, and a full fsck through a drive opened on the copy. Running it
// again on a finished migration only checks.
func Migrate(ctx context.Context, c MigrateConfig) (MigrateReport, error) {
	var rep MigrateReport
	progress := func() {
		if c.Progress != nil {
			c.Progress(rep)
		}
	}
	dbPath := filepath.Join(c.DataDir, "meta.db")
	if _, err := os.Stat(dbPath); err != nil {
		return rep, fmt.Errorf("no drive in %s: %w", c.DataDir, err)
	}
	if !meta.IsPostgresURL(c.ToMeta) {
		return rep, fmt.Errorf("migrate to %q: the destination metadata store must be postgres://…", c.ToMeta)
	}
	src, err := meta.OpenSQLite(ctx, dbPath, nil)
	if err != nil {
		return rep, err
	}
	defer src.Close()
	srcBlobs, err := dedup.NewDiskStore(filepath.Join(c.DataDir, "chunks"))
	if err != nil {
		return rep, err
	}
	dstBlobs, err := dedup.OpenS3(ctx, c.ToBlobs)
	if err != nil {
		return rep, err
	}
	dst, err := meta.OpenPostgres(ctx, c.ToMeta, nil)
	if err != nil {
		return rep, err
	}
	defer dst.Close()

	// 1. Chunks: every chunk the metadata references, verified on the way.
	// Small chunks kept inline in the metadata go with it (step 2).
	ch := &rep.Chunks
	err = src.EachChunk(ctx, func(mc meta.Chunk) error {
		k := dedup.Key(mc.SHA256)
		if _, ok, err := src.ChunkData(ctx, mc.SHA256); err != nil {
			return err
		} else if ok {
			ch.Inline++
			return nil
		}
		ok, err := dstBlobs.Has(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			ch.Present++
			return nil
		}
		r, err := srcBlobs.Open(ctx, k)
		if err != nil {
			return fmt.Errorf("chunk %s: %w (run `netdisk admin fsck` on the source first)", k, err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return fmt.Errorf("chunk %s: %w", k, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != mc.SHA256 || int64(len(b)) != mc.Size {
			return fmt.Errorf("chunk %s is corrupt in the source (run `netdisk admin fsck` on it first)", k)
		}
		if err := dstBlobs.Put(ctx, k, b); err != nil {
			return err
		}
		ch.Copied++
		ch.Bytes += int64(len(b))
		if ch.Copied%100 == 0 {
			progress()
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("copying chunks: %w", err)
	}
	rep.ChunksDone = true
	progress()

	// 2. Metadata, in one transaction.
	res, err := src.CopyTo(ctx, dst)
	if err != nil {
		return rep, fmt.Errorf("copying metadata: %w", err)
	}
	rep.Meta = &res
	progress()

	// 3. Check the result as the nodes will see it.
	want, err := src.Stats(ctx)
	if err != nil {
		return rep, err
	}
	got, err := dst.Stats(ctx)
	if err != nil {
		return rep, err
	}
	if got != want {
		return rep, fmt.Errorf("the copy's figures differ from the source's: %+v, want %+v", got, want)
	}
	rep.Stats = &got
	tmp, err := os.MkdirTemp("", "netdisk-migrate-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(tmp)
	l, err := OpenLocal(ctx, LocalConfig{Dir: tmp, MetaURL: c.ToMeta, BlobStore: dstBlobs,
		Ledger: func(cfg quota.Config) quota.Ledger { return quota.NewMemory(cfg) }})
	if err != nil {
		return rep, err
	}
	defer l.Close()
	fr, err := l.Drive.Fsck(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("fsck of the copy: %w", err)
	}
	rep.Fsck = &fr
	if len(fr.Problems) > 0 {
		return rep, fmt.Errorf("fsck of the copy found %d problems", len(fr.Problems))
	}
	return rep, nil
}
