package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/meta"
	"netdisk/quota"
)

func newAdminMigrateCmd() *cobra.Command {
	var dataDir, toMeta, toBlobs string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move a single-node drive (SQLite + chunk directory) to PostgreSQL + S3",
		Long: `Copy the drive in --data to a shared metadata store and chunk store, for
running several nodes (docs/deploy.md). Stop the daemon first; unlike the
other admin commands this one works on the data directory, not through the
daemon.

Chunks are copied first, each verified against its SHA-256; chunks already
in the bucket are skipped, so an interrupted migration resumes where it
stopped. The metadata is then copied in one transaction into an empty
PostgreSQL database (an interrupted copy leaves it empty; run the command
again). Last, the result is checked: every table's row count, the drive's
figures, and a full fsck that reads every chunk back from the bucket.
Running it again on a finished migration only checks.

The source is left as it was: keep it until the nodes run on the copy.`,
		Example: `  AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… netdisk admin migrate --data /var/lib/netdisk \
    --to-meta postgres://netdisk:secret@db/netdisk \
    --to-blobs 's3://netdisk-chunks?endpoint=s3:9000&region=us-east-1'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if toMeta == "" || toBlobs == "" {
				return errors.New("--to-meta and --to-blobs are both required")
			}
			return migrate(cmd.Context(), cmd.OutOrStdout(), dataDir, toMeta, toBlobs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data", "./netdisk-data", "the single-node data directory to migrate (daemon stopped)")
	f.StringVar(&toMeta, "to-meta", "", "destination metadata store, postgres://… (an empty database)")
	f.StringVar(&toBlobs, "to-blobs", "", "destination chunk store, s3://BUCKET[/PREFIX]?endpoint=…&region=…")
	return cmd
}

func migrate(ctx context.Context, out io.Writer, dataDir, toMeta, toBlobs string) error {
	dbPath := filepath.Join(dataDir, "meta.db")
	if _, err := os.Stat(dbPath); err != nil {
		return fmt.Errorf("no drive in %s: %w", dataDir, err)
	}
	if !meta.IsPostgresURL(toMeta) {
		return fmt.Errorf("--to-meta %q: want postgres://…", toMeta)
	}
	src, err := meta.OpenSQLite(ctx, dbPath, nil)
	if err != nil {
		return err
	}
	defer src.Close()
	srcBlobs, err := dedup.NewDiskStore(filepath.Join(dataDir, "chunks"))
	if err != nil {
		return err
	}
	dstBlobs, err := dedup.OpenS3(ctx, toBlobs)
	if err != nil {
		return err
	}
	dst, err := meta.OpenPostgres(ctx, toMeta, nil)
	if err != nil {
		return err
	}
	defer dst.Close()

	// 1. Chunks: every chunk the metadata references, verified on the way.
	// Small chunks kept inline in the metadata go with it (step 2).
	var copied, present, inline, bytes int64
	err = src.EachChunk(ctx, func(c meta.Chunk) error {
		k := dedup.Key(c.SHA256)
		if _, ok, err := src.ChunkData(ctx, c.SHA256); err != nil {
			return err
		} else if ok {
			inline++
			return nil
		}
		ok, err := dstBlobs.Has(ctx, k)
		if err != nil {
			return err
		}
		if ok {
			present++
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
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != c.SHA256 || int64(len(b)) != c.Size {
			return fmt.Errorf("chunk %s is corrupt in the source (run `netdisk admin fsck` on it first)", k)
		}
		if err := dstBlobs.Put(ctx, k, b); err != nil {
			return err
		}
		copied++
		bytes += int64(len(b))
		if copied%100 == 0 {
			fmt.Fprintf(out, "chunks: %d copied (%s), %d already there\n", copied, ibytes(bytes), present)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("copying chunks: %w", err)
	}
	fmt.Fprintf(out, "chunks: %d copied (%s), %d already there, %d inline (they go with the metadata)\n", copied, ibytes(bytes), present, inline)

	// 2. Metadata, in one transaction.
	res, err := src.CopyTo(ctx, dst)
	if err != nil {
		return fmt.Errorf("copying metadata: %w", err)
	}
	if res.Copied {
		fmt.Fprintln(out, "metadata: copied")
	} else {
		fmt.Fprintln(out, "metadata: already copied (row counts match); checking")
	}
	for _, t := range res.Tables {
		fmt.Fprintf(out, "  %-18s %d rows\n", t.Table, t.Dst)
	}

	// 3. Check the result as the nodes will see it.
	want, err := src.Stats(ctx)
	if err != nil {
		return err
	}
	got, err := dst.Stats(ctx)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("the copy's figures differ from the source's: %+v, want %+v", got, want)
	}
	tmp, err := os.MkdirTemp("", "netdisk-migrate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	l, err := drive.OpenLocal(ctx, drive.LocalConfig{Dir: tmp, MetaURL: toMeta, BlobStore: dstBlobs,
		Ledger: func(cfg quota.Config) quota.Ledger { return quota.NewMemory(cfg) }})
	if err != nil {
		return err
	}
	defer l.Close()
	fr, err := l.Drive.Fsck(ctx, nil)
	if err != nil {
		return fmt.Errorf("fsck of the copy: %w", err)
	}
	if len(fr.Problems) > 0 {
		for _, p := range fr.Problems {
			fmt.Fprintf(out, "fsck: %s %s %s\n", p.SHA256, p.Problem, p.Detail)
		}
		return fmt.Errorf("fsck of the copy found %d problems", len(fr.Problems))
	}
	fmt.Fprintf(out, "verified: %d users, %d files, %d chunks (%s); fsck read every chunk back from the bucket: no problems\n",
		got.Users, got.Files, fr.Checked, ibytes(fr.Bytes))
	return nil
}
