package main

import (
	"context"
	"errors"
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
	)
	cmd := &cobra.Command{
		Use:   "push LOCAL [REMOTE]",
		Short: "Upload a file or a directory (chunked, resumable, deduplicated)",
		Long: `Upload LOCAL (a file or a whole directory) to REMOTE, by default /BASENAME.
A REMOTE ending in "/" or naming an existing directory receives LOCAL under its
base name. Files under the server's small-file limit go in one request; larger
ones are cut into the server's chunks, hashed while being read, and only the
chunks the server lacks are sent, --concurrency at a time. Content the server
already holds is not sent again (instant upload, after a proof of possession).

Interrupted (Ctrl-C, crash, network)? Run the same push again: it resumes
and sends only what is missing.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			remote := ""
			if len(args) == 2 {
				remote = args[1]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runPush(ctx, cmd, cf.client(), args[0], remote, concurrency, jsonOut, chunked)
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.IntVar(&concurrency, "concurrency", 3, "chunks (and small files) sent at once")
	f.BoolVar(&jsonOut, "json", false, "print one JSON event per line instead of progress")
	f.BoolVar(&chunked, "chunked", false, "send small files in chunks too (per-chunk dedup and resume for everything)")
	return cmd
}

func runPush(ctx context.Context, cmd *cobra.Command, c *client.Client, local, remote string, concurrency int, jsonOut, chunked bool) error {
	files, dirs, err := c.PushPlan(ctx, local, remote)
	if err != nil {
		return cliError(ctx, err)
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	rep := newPushReporter(pickOutput(jsonOut, cmd.ErrOrStderr()), cmd.OutOrStdout(), cmd.ErrOrStderr(), total, len(files))
	o := client.PushOptions{Concurrency: concurrency, OnEvent: rep.on}
	if chunked {
		o.SmallFileLimit = -1
	}
	start := time.Now()
	res, err := c.PushFiles(ctx, files, dirs, o)
	rep.finish(res, time.Since(start))
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
