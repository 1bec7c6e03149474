package main

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"netdisk/client"
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
				err := c.Remove(cmd.Context(), p, recursive)
				if !recursive && client.StatusOf(err) == http.StatusConflict {
					// The server words it for API callers; say it in this command's terms.
					return fmt.Errorf("%s: directory not empty (use rm -r)", p)
				}
				if err != nil {
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
