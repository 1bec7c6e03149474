package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"netdisk/drive"
	"netdisk/meta"
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
			if !meta.IsPostgresURL(toMeta) {
				return fmt.Errorf("--to-meta %q: want postgres://…", toMeta)
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

// migrate runs drive.Migrate and prints its progress: each phase's result
// as it ends, and every problem the final fsck found.
func migrate(ctx context.Context, out io.Writer, dataDir, toMeta, toBlobs string) error {
	var chunksSaid, metaSaid bool
	say := func(r drive.MigrateReport) {
		c := r.Chunks
		switch {
		case r.Meta != nil && !metaSaid:
			metaSaid = true
			if r.Meta.Copied {
				fmt.Fprintln(out, "metadata: copied")
			} else {
				fmt.Fprintln(out, "metadata: already copied (row counts match); checking")
			}
			for _, t := range r.Meta.Tables {
				fmt.Fprintf(out, "  %-18s %d rows\n", t.Table, t.Dst)
			}
		case r.ChunksDone && !chunksSaid:
			chunksSaid = true
			fmt.Fprintf(out, "chunks: %d copied (%s), %d already there, %d inline (they go with the metadata)\n", c.Copied, ibytes(c.Bytes), c.Present, c.Inline)
		case !r.ChunksDone:
			fmt.Fprintf(out, "chunks: %d copied (%s), %d already there\n", c.Copied, ibytes(c.Bytes), c.Present)
		}
	}
	rep, err := drive.Migrate(ctx, drive.MigrateConfig{DataDir: dataDir, ToMeta: toMeta, ToBlobs: toBlobs, Progress: say})
	if rep.Fsck != nil {
		for _, p := range rep.Fsck.Problems {
			fmt.Fprintf(out, "fsck: %s %s %s\n", p.SHA256, p.Problem, p.Detail)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "verified: %d users, %d files, %d chunks (%s); fsck read every chunk back from the bucket: no problems\n",
		rep.Stats.Users, rep.Stats.Files, rep.Fsck.Checked, ibytes(rep.Fsck.Bytes))
	return nil
}
