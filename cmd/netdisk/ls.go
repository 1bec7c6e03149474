package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

func init() { extraCommands = append(extraCommands, newLsCmd) }

func newJSONLines(w io.Writer) *json.Encoder { return json.NewEncoder(w) }

func newLsCmd() *cobra.Command {
	var (
		cf      clientFlags
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "ls [REMOTE]",
		Short: "List a remote directory (or describe a file)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := "/"
			if len(args) == 1 {
				p = args[0]
			}
			c := cf.client()
			ctx := cmd.Context()
			n, err := c.Stat(ctx, p)
			if err != nil {
				return cliError(ctx, err)
			}
			nodes := []apitype.Node{n}
			if n.IsDir {
				if nodes, err = c.List(ctx, p); err != nil {
					return cliError(ctx, err)
				}
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), nodes)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, e := range nodes {
				name, size := e.Name, ibytes(e.Size)
				switch {
				case e.IsDir:
					name, size = name+"/", "-"
				case e.IsSymlink():
					name = name + " -> " + e.Target // as ls -l shows a link
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", size, e.MTime.Local().Format(time.DateTime), name)
			}
			return tw.Flush()
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the entries as JSON")
	return cmd
}
