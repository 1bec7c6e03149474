package main

import (
	"fmt"
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
	)
	cmd := &cobra.Command{
		Use:   "pull REMOTE [LOCAL]",
		Short: "Download a file or a directory (resumable, verified)",
		Long: `Download REMOTE to LOCAL (default: its base name here; an existing directory
receives it under its base name). Bytes go to LOCAL.part first; an interrupted
pull resumes from there with a Range request if the file has not changed, and
the result is checked against the server's file hash before it is renamed.

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
				res, err = c.Pull(ctx, args[0], local, o)
			}
			if bar != nil {
				bar.Finish()
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			el := time.Since(start)
			if mode == outJSON {
				enc.Encode(map[string]any{"type": "summary", "files": res.Files, "bytes": res.Bytes, "resumed": res.Resumed, "seconds": el.Seconds()})
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%d file(s): %s received, %s resumed from .part, in %s\n",
					res.Files, ibytes(res.Bytes), ibytes(res.Resumed), el.Round(time.Millisecond))
			}
			return cliError(ctx, err)
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print JSON lines instead of progress")
	cmd.Flags().StringVar(&sharedCache, "shared-cache", "", "cache folder shared by nodes on this host: the file is transferred once between them (one file, not a directory)")
	cmd.Flags().StringVar(&node, "node", "", "this node's name for --shared-cache (default HOSTNAME-PID)")
	return cmd
}
