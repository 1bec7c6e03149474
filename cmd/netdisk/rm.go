package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"netdisk/client"
	"netdisk/errs"
)

func init() { extraCommands = append(extraCommands, newRmCmd) }

func newRmCmd() *cobra.Command {
	var (
		cf        clientFlags
		recursive bool
	)
	cmd := &cobra.Command{
		Use:   "rm REMOTE...",
		Short: "Remove remote files or directories (into your trash: see netdisk trash)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := cf.client()
			for _, p := range args {
				err := c.Remove(cmd.Context(), p, recursive)
				// The server words it for API callers; say it in this
				// command's terms, by the answer's code.
				switch client.KindOf(err) {
				case errs.NotEmpty:
					return fmt.Errorf("%s: directory not empty (use rm -r)", p)
				case errs.IsDir:
					return fmt.Errorf("%s: is a directory (use rm -r)", p)
				case errs.NotFound:
					return fmt.Errorf("%s: no such file or directory", p)
				case errs.Permission:
					var ae *client.Error
					errors.As(err, &ae)
					return fmt.Errorf("%s: cannot be removed: %s", p, ae.Message)
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
