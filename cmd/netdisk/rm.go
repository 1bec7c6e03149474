package main

import (
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newRmCmd) }

func newRmCmd() *cobra.Command {
	var (
		cf        clientFlags
		recursive bool
	)
	cmd := &cobra.Command{
		Use:   "rm REMOTE...",
		Short: "Remove remote files or directories",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			for _, p := range args {
				if err := c.Remove(cmd.Context(), p, recursive); err != nil {
					return cliError(cmd.Context(), err)
				}
			}
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "remove directories and their contents")
	return cmd
}
