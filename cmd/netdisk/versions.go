package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"netdisk/errs"
	"netdisk/internal/atomicfile"
)

func init() { extraCommands = append(extraCommands, newVersionsCmd) }

func newVersionsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "versions",
		Short: "List, fetch and restore a file's earlier versions",
		Long: `Every change of a file's content (a PUT or upload over it, a save in the
mount, a file moved or copied over it, a restore) keeps the content it
replaced as a version, with its time, size and author. Versions are thinned
with age on the server (see serve --versions-retention and --versions-max) and
do not count in the quota. A version is named by the id 'versions ls' shows.`,
		Example: `  netdisk versions ls /notes.txt
  netdisk versions get /notes.txt 42 -o notes-before.txt
  netdisk versions restore /notes.txt 42`,
	}
	cmd.AddCommand(newVersionsLsCmd(), newVersionsGetCmd(), newVersionsRestoreCmd())
	return cmd
}

func parseVersionID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.Errorf("versions", errs.Invalid, "version %q is not a version id (see 'netdisk versions ls')", s)
	}
	return id, nil
}

func newVersionsLsCmd() *cobra.Command {
	var (
		cf      clientFlags
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "ls REMOTE",
		Short: "List a file's versions, newest first",
		Example: `  netdisk versions ls /notes.txt
  netdisk versions ls --json /notes.txt | jq '.versions[0].id'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			l, err := cf.client().Versions(ctx, args[0])
			if err != nil {
				return cliError(ctx, err)
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), l)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "VERSION\tSAVED\tSIZE\tMODIFIED\tAUTHOR\n")
			for _, v := range l.Versions {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", v.ID, v.Saved.Local().Format(time.DateTime), ibytes(v.Size),
					v.MTime.Local().Format(time.DateTime), v.Author)
			}
			return tw.Flush()
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the file and its versions as JSON")
	return cmd
}

func newVersionsGetCmd() *cobra.Command {
	var (
		cf  clientFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "get REMOTE VERSION -o FILE",
		Short: "Download a version of a file (-o - writes it to standard output)",
		Example: `  netdisk versions get /notes.txt 42 -o notes-before.txt
  netdisk versions get /notes.txt 42 -o - | diff - notes.txt`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			vid, err := parseVersionID(args[1])
			if err != nil {
				return err
			}
			if out == "" {
				return errs.Errorf("versions get", errs.Invalid, "-o FILE is required (- for standard output)")
			}
			body, err := cf.client().VersionContent(ctx, args[0], vid)
			if err != nil {
				return cliError(ctx, err)
			}
			defer body.Close()
			if out == "-" {
				_, err = io.Copy(cmd.OutOrStdout(), body)
				return cliError(ctx, err)
			}
			// Whole or not at all: a cut download leaves no half file.
			return cliError(ctx, atomicfile.Write(out, 0o644, func(w io.Writer) error {
				_, err := io.Copy(w, body)
				return err
			}))
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (- for standard output)")
	return cmd
}

func newVersionsRestoreCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:     "restore REMOTE VERSION",
		Short:   "Make a version the file's content again (the current content is kept as a version)",
		Example: `  netdisk versions restore /notes.txt 42`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			vid, err := parseVersionID(args[1])
			if err != nil {
				return err
			}
			n, err := cf.client().RestoreVersion(ctx, args[0], vid)
			if err != nil {
				return cliError(ctx, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s to version %d (%s); the content it replaced is a version now\n", n.Path, vid, ibytes(n.Size))
			return nil
		},
	}
	cf.register(cmd)
	return cmd
}
