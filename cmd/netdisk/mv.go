package main

import (
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newMvCmd) }

func newMvCmd() *cobra.Command {
	var (
		cf    clientFlags
		force bool
	)
	cmd := &cobra.Command{
		Use:   "mv FROM TO",
		Short: "Move or rename a remote file or directory",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := cf.client().Move(cmd.Context(), args[0], args[1], force)
			return cliError(cmd.Context(), err)
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVarP(&force, "force", "f", false, "replace an existing destination")
	return cmd
}
