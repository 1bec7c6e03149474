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
			if q.Quota > 0 {
				free = ibytes(q.Quota - q.Finished - q.Unfinished)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota %s, used %s in files, %s in unfinished uploads, free %s\n",
				formatQuota(q.Quota), ibytes(q.Finished), ibytes(q.Unfinished), free)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print as JSON")
	return cmd
}
