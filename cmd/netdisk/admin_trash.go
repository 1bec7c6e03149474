package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newAdminTrashCmd(env *adminEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "Manage users' trash",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var (
		user      string
		olderThan string
	)
	purge := &cobra.Command{
		Use:   "purge --user U [--older-than D]",
		Short: "Delete a user's trash items for good (all, or those deleted longer than D ago)",
		Long: `Delete items of a user's trash for good, ahead of the daemon's
--trash-retention: all of them, or with --older-than those deleted longer ago
than D (days as 7d, or a duration such as 36h). Their chunks are freed by the
next gc unless something else holds them.`,
		Example: `  netdisk admin trash purge --user alice
  netdisk admin trash purge --user alice --older-than 7d`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user == "" {
				return &exitError{code: exitUsage, err: fmt.Errorf("--user is required")}
			}
			var age time.Duration
			if olderThan != "" {
				var err error
				if age, err = parseDays(olderThan); err != nil || age <= 0 {
					return &exitError{code: exitUsage, err: fmt.Errorf("--older-than %q: want a positive duration such as 7d or 36h", olderThan)}
				}
			}
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			n, err := c.AdminPurgeTrash(cmd.Context(), user, age)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d item(s) of %s's trash deleted for good\n", n, user)
			return nil
		},
	}
	purge.Flags().StringVar(&user, "user", "", "whose trash")
	purge.Flags().StringVar(&olderThan, "older-than", "", "only items deleted longer ago than this (e.g. 7d, 36h)")
	cmd.AddCommand(purge)
	return cmd
}
