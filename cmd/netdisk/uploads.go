package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newUploadsCmd) }

// newUploadsCmd lists and aborts open upload sessions: each reserves its
// file's declared size of the quota until it is merged, aborted or expires
// (72 h idle by default), so a push abandoned for good on a full quota is
// freed here at once rather than days later.
func newUploadsCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "uploads",
		Short: "List or abort your open (unfinished) uploads",
		Long: `An upload of a large file opens a session on the server that reserves the
file's size of your quota until it finishes, is aborted, or has been idle
for the server's --session-ttl (72h by default). An interrupted push keeps
its sessions so that running it again resumes them; when you will not run
it again, abort them to free the space now.

  netdisk uploads ls            list open uploads (ID, path, received/size, last use)
  netdisk uploads abort ID...   abort these
  netdisk uploads abort --all   abort every open upload of yours`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cf.register(cmd)

	var jsonOut bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List your open uploads, the most recently used first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			open, err := cf.client().Uploads(cmd.Context())
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), open)
			}
			if len(open) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no open uploads")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tPATH\tRECEIVED\tSIZE\tLAST USE\tEXPIRES")
			var reserved int64
			for _, o := range open {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", o.UploadID, o.Path, ibytes(o.Received), ibytes(o.Size),
					o.Touched.Local().Format(time.DateTime), o.Expires.Local().Format(time.DateTime))
				reserved += o.Size
			}
			w.Flush()
			fmt.Fprintf(cmd.OutOrStdout(), "%d open uploads reserve %s (netdisk uploads abort ID or --all frees it)\n", len(open), ibytes(reserved))
			return nil
		},
	}
	ls.Flags().BoolVar(&jsonOut, "json", false, "print as JSON")

	var all bool
	abort := &cobra.Command{
		Use:   "abort ID... | --all",
		Short: "Abort open uploads and free the quota they reserve",
		RunE: func(cmd *cobra.Command, ids []string) error {
			ctx := cmd.Context()
			c := cf.client()
			switch {
			case all && len(ids) > 0:
				return errors.New("give upload IDs or --all, not both")
			case !all && len(ids) == 0:
				return errors.New("no upload ID given (netdisk uploads ls lists them; --all aborts every one)")
			case all:
				open, err := c.Uploads(ctx)
				if err != nil {
					return cliError(ctx, err)
				}
				for _, o := range open {
					ids = append(ids, o.UploadID)
				}
			}
			for _, id := range ids {
				if err := c.Abort(ctx, id); err != nil {
					return fmt.Errorf("abort %s: %w", id, cliError(ctx, err))
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "aborted %d uploads\n", len(ids))
			return nil
		},
	}
	abort.Flags().BoolVar(&all, "all", false, "abort every open upload of yours")
	cmd.AddCommand(ls, abort)
	return cmd
}
