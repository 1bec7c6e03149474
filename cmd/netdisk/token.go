package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

func init() { extraCommands = append(extraCommands, newTokenCmd) }

func newTokenCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make, list and revoke app tokens (app passwords for devices)",
		Long: `An app token signs a device or a program in as you wherever your password
does: WebDAV (as the Basic password), the API, netdisk mount, netdisk agent,
rclone. Give each device its own: it never holds your password, and revoking
one (netdisk token rm) cuts off that device alone, on every node at once.

A token is shown once, when it is made, and stored only hashed. Changing
your password leaves tokens working. A token cannot change the password nor
make or revoke tokens: those need your password.`,
		Example: `  netdisk token add laptop-mount                 # prints the token once
  NETDISK_PASSWORD=ndt_… netdisk mount --user alice ~/netdisk
  netdisk token ls
  netdisk token rm laptop-mount`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cf.register(cmd)

	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Make a token and print it (shown this once only)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := cf.client().AddToken(cmd.Context(), args[0])
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			// The token alone on stdout, for scripts; the advice apart.
			fmt.Fprintln(cmd.OutOrStdout(), t.Secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "token %q made: use it as %s's password; it is not shown again\n", t.Name, cf.user)
			return nil
		},
	}
	var asJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your tokens with when they were made and last used",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := cf.client().Tokens(cmd.Context())
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if asJSON {
				if ts == nil {
					ts = []apitype.Token{}
				}
				return writeJSON(cmd.OutOrStdout(), ts)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCREATED\tLAST USE")
			for _, t := range ts {
				last := "never"
				if t.LastUse != nil {
					last = t.LastUse.Local().Format("2006-01-02 15:04")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Created.Local().Format("2006-01-02 15:04"), last)
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	rm := &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"del", "revoke"},
		Short:   "Revoke a token (on every node, at once)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.client().RemoveToken(cmd.Context(), args[0]); err != nil {
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %q revoked\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(add, ls, rm)
	return cmd
}
