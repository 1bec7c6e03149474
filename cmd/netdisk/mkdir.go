package main

import (
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newMkdirCmd) }

func newMkdirCmd() *cobra.Command {
	var (
		cf      clientFlags
		parents bool
	)
	cmd := &cobra.Command{
		Use:   "mkdir REMOTE...",
		Short: "Create remote directories",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			for _, p := range args {
				if _, err := c.Mkdir(cmd.Context(), p, parents); err != nil {
					return cliError(cmd.Context(), err)
				}
			}
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVarP(&parents, "parents", "p", false, "create missing parents; an existing directory is fine")
	return cmd
}
