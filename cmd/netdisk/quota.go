package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newQuotaCmd) }

func newQuotaCmd() *cobra.Command {
	var (
		cf      clientFlags
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Show your quota and usage",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := cf.client().Quota(cmd.Context())
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), q)
			}
			free := "unlimited"
			if q.Free >= 0 {
				free = ibytes(q.Free)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota %s, used %s in files and %s by their entries, %s received by unfinished uploads (%s declared), free %s\n",
				formatQuota(q.Total), ibytes(q.Finished), ibytes(q.Metadata), ibytes(q.Unfinished), ibytes(q.Uploading), free)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print as JSON")
	return cmd
}
