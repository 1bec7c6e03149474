package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"netdisk/client"
)

func init() { extraCommands = append(extraCommands, newPullCmd) }

func newPullCmd() *cobra.Command {
	var (
		cf          clientFlags
		jsonOut     bool
		sharedCache string
		node        string
		so          syncFlags
	)
	cmd := &cobra.Command{
		Use:   "pull REMOTE [LOCAL]",
		Short: "Download a file or a directory (resumable, verified)",
		Long: `Download REMOTE (a file or a whole directory) to LOCAL (default ".").

Where it lands (rsync's rule, as push's, decided by the command line alone):
  pull /DIR  dest     DIR itself goes into dest: dest/DIR/...
  pull /DIR/ dest     the contents of /DIR go into dest: dest/...
  pull /FILE dest     into dest when dest ends in "/" or is a directory,
                      otherwise dest is the file's new name.

Every file and directory gets the server's modification time and permission
bits. A file whose local copy has the same size and modification time is
skipped (with --checksum: the same content, by file hash); --delete removes
what the local target holds that REMOTE lacks (a mirror); --dry-run prints
what would be fetched and deleted.

A symbolic link on the drive is recreated as a link with the same target
(rsync -l), never followed; a local link with the same target is left alone.

Bytes go to FILE.part first; an interrupted pull resumes from there with a
Range request if the file has not changed, and the result is checked against
the server's file hash before it is renamed.

With --shared-cache DIR, nodes on one host (containers, several mounts)
sharing DIR pull a file once between them: each takes the server's pull lock
on the file's content; the holder downloads into DIR (a temporary name, then
renamed to the file hash) and the others wait their turn in FIFO order, then
copy it from DIR. If the holder fails or dies, the next waiter takes over
and resumes its partial download. --node names this node (default
HOSTNAME-PID); nodes sharing a cache need distinct names. When the server
runs with --multi-node-pull=false a busy lock is refused and this node
pulls directly instead.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			local := ""
			if len(args) == 2 {
				local = args[1]
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			c := cf.client()
			mode := pickOutput(jsonOut, cmd.ErrOrStderr())
			var bar *progressbar.ProgressBar
			var cur string
			var enc = newJSONLines(cmd.OutOrStdout())
			o := client.PullOptions{OnProgress: func(file string, done, total int64) {
				switch mode {
				case outJSON:
					enc.Encode(map[string]any{"type": "progress", "local": file, "done": done, "total": total})
				case outBar:
					if file != cur {
						if bar != nil {
							bar.Finish()
							fmt.Fprintln(cmd.ErrOrStderr())
						}
						cur = file
						bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(cmd.ErrOrStderr()),
							progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true),
							progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
							progressbar.OptionSetDescription(file), progressbar.OptionFullWidth())
					}
					bar.Set64(done)
				}
			}}
			start := time.Now()
			var res client.PullResult
			var err error
			if sharedCache != "" {
				res, err = sharedPull(ctx, c, args[0], local, sharedCache, node, o, mode, enc, cmd.ErrOrStderr())
			} else {
				var plan client.PullPlan
				plan, err = c.PlanPull(ctx, args[0], local, so.options())
				if err != nil {
					return cliError(ctx, err)
				}
				if so.dryRun {
					printPullPlan(cmd.OutOrStdout(), plan)
					return nil
				}
				res, err = c.PullPlanned(ctx, plan, o)
			}
			if bar != nil {
				bar.Finish()
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			el := time.Since(start)
			switch {
			case mode == outJSON:
				enc.Encode(map[string]any{"type": "summary", "files": res.Files, "bytes": res.Bytes, "resumed": res.Resumed,
					"skipped": res.Skipped, "skippedBytes": res.SkippedBytes, "deleted": res.Deleted, "seconds": el.Seconds()})
			case err != nil && res.Files == 0 && res.Skipped == 0 && res.Deleted == 0:
				// Nothing done: the error line says it all.
			default:
				fmt.Fprintln(cmd.OutOrStdout(), summaryLine(res.Files, res.Bytes, "received", res.Skipped, el,
					extras{resumed: res.Resumed, deleted: res.Deleted}))
			}
			return cliError(ctx, err)
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON lines instead of progress")
	cmd.Flags().StringVar(&sharedCache, "shared-cache", "", "cache folder shared by nodes on this host: the file is transferred once between them (one file, not a directory)")
	cmd.Flags().StringVar(&node, "node", "", "this node's name for --shared-cache (default HOSTNAME-PID)")
	so.register(cmd, "local")
	cmd.MarkFlagsMutuallyExclusive("shared-cache", "delete")
	cmd.MarkFlagsMutuallyExclusive("shared-cache", "dry-run")
	cmd.MarkFlagsMutuallyExclusive("shared-cache", "checksum")
	return cmd
}

// printPullPlan is pull --dry-run's answer.
func printPullPlan(out io.Writer, p client.PullPlan) {
	var n int64
	for _, f := range p.Files {
		fmt.Fprintf(out, "fetch %s -> %s (%s)\n", f.Remote, f.Local, ibytes(f.Node.Size))
		n += f.Node.Size
	}
	for _, f := range p.Touch {
		fmt.Fprintf(out, "attributes %s\n", f.Local)
	}
	for _, d := range p.Delete {
		fmt.Fprintf(out, "delete %s\n", d)
	}
	fmt.Fprintf(out, "dry run: %d files (%s) to fetch, %d unchanged, %d to delete\n", len(p.Files), ibytes(n), len(p.Skip)+len(p.Touch), len(p.Delete))
}
