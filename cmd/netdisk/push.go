package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"netdisk/client"
)

func init() { extraCommands = append(extraCommands, newPushCmd) }

func newPushCmd() *cobra.Command {
	var (
		cf          clientFlags
		concurrency int
		jsonOut     bool
		chunked     bool
		so          syncFlags
	)
	cmd := &cobra.Command{
		Use:   "push LOCAL [REMOTE]",
		Short: "Upload a file or a directory (chunked, resumable, deduplicated, incremental)",
		Long: `Upload LOCAL (a file or a whole directory) to REMOTE (default /).

Where it lands (rsync's rule, decided by the command line alone, so a re-run
lands where the first run did):
  push DIR  /dest     DIR itself goes into /dest: /dest/DIR/...
  push DIR/ /dest     the contents of DIR go into /dest: /dest/...
  push FILE /dest/    FILE goes into /dest: /dest/FILE (also when /dest is a
                      directory); otherwise /dest is the file's new name.

A file whose remote copy has the same size and modification time is skipped
(with --checksum: the same content, by file hash); the mtime and permission
bits of every file sent are stored with it, and fixed on a skipped file whose
content is the same. --delete removes what the remote target holds that
LOCAL lacks (a mirror; the target is the one the rule names, so
"push --delete DIR/ /" mirrors DIR onto your whole drive: try --dry-run
first); --dry-run prints what would be sent and deleted.

A symbolic link is sent as a link (rsync -l): its target is stored as
text, never followed, and a remote link with the same target is left alone.
Devices, fifos and sockets are not sent.

Files under the server's small-file limit go in one request; larger ones are
cut into the server's chunks, hashed while being read, and only the chunks
the server lacks are sent, --concurrency at a time. Content the server
already holds is not sent again (instant upload, after a proof of
possession).

Interrupted (Ctrl-C, crash, network)? Run the same push again: finished files
are skipped and a half-sent file resumes its open upload, sending only the
missing chunks (a file that changed size meanwhile has its stale upload
aborted). An upload abandoned for good keeps its quota reserved until
it expires: see "netdisk uploads".`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			remote := ""
			if len(args) == 2 {
				remote = args[1]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runPush(ctx, cmd, cf.client(), args[0], remote, concurrency, jsonOut, chunked, so)
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.IntVar(&concurrency, "concurrency", 3, "chunks (and small files) sent at once")
	f.BoolVar(&jsonOut, "json", false, "print one JSON event per line instead of progress")
	f.BoolVar(&chunked, "chunked", false, "send small files in chunks too (per-chunk dedup and resume for everything)")
	so.register(cmd, "remote")
	return cmd
}

// syncFlags are push's and pull's choice of what to skip and delete.
type syncFlags struct {
	checksum, delete, dryRun bool
}

func (s *syncFlags) register(cmd *cobra.Command, dest string) {
	f := cmd.Flags()
	f.BoolVar(&s.checksum, "checksum", false, "skip files by content (file hash) instead of size and modification time")
	f.BoolVar(&s.delete, "delete", false, "delete what the "+dest+" target holds that the source lacks (mirror)")
	f.BoolVar(&s.dryRun, "dry-run", false, "print what would be transferred and deleted, change nothing")
}

func (s syncFlags) options() client.SyncOptions {
	return client.SyncOptions{Checksum: s.checksum, Delete: s.delete}
}

func runPush(ctx context.Context, cmd *cobra.Command, c *client.Client, local, remote string, concurrency int, jsonOut, chunked bool, so syncFlags) error {
	start := time.Now()
	plan, err := c.PlanPush(ctx, local, remote, so.options())
	if err != nil {
		return cliError(ctx, err)
	}
	if so.dryRun {
		out := cmd.OutOrStdout()
		var n int64
		for _, f := range plan.Files {
			fmt.Fprintf(out, "send %s -> %s (%s)\n", f.Local, f.Remote, ibytes(f.Size))
			n += f.Size
		}
		for _, f := range plan.Touch {
			fmt.Fprintf(out, "attributes %s\n", f.Remote)
		}
		for _, d := range plan.Delete {
			fmt.Fprintf(out, "delete %s\n", d)
		}
		fmt.Fprintf(out, "dry run: %d files (%s) to send, %d unchanged, %d to delete\n", len(plan.Files), ibytes(n), len(plan.Skip)+len(plan.Touch), len(plan.Delete))
		return nil
	}
	var total int64
	for _, f := range plan.Files {
		total += f.Size
	}
	rep := newPushReporter(pickOutput(jsonOut, cmd.ErrOrStderr()), cmd.OutOrStdout(), cmd.ErrOrStderr(), total, len(plan.Files))
	o := client.PushOptions{Concurrency: concurrency, OnEvent: rep.on}
	if chunked {
		o.SmallFileLimit = -1
	}
	res, err := c.PushPlanned(ctx, plan, o)
	rep.finish(res, time.Since(start), err)
	return cliError(ctx, err)
}

// cliError makes err one clear line with a fitting exit status: 130 when
// the user interrupted, 1 otherwise.
func cliError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return &exitError{code: 130, err: errors.New("interrupted; run the same command again to resume")}
	}
	return friendly(err)
}
