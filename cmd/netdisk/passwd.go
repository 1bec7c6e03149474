package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newPasswdCmd) }

func newPasswdCmd() *cobra.Command {
	var (
		cf      clientFlags
		newPass string
	)
	cmd := &cobra.Command{
		Use:   "passwd",
		Short: "Change your password",
		Long: `Change your own password. Your current password is the connection's
(--password, NETDISK_PASSWORD, or asked for on a terminal); the new one comes
from --new-password or NETDISK_NEW_PASSWORD, or you are asked for it twice,
without echo, on a terminal.

The change signs you out of the web page in every browser, on every node of
the daemon. App tokens (netdisk token) keep working: revoke them one by one.
An app token cannot change the password: sign in with the password itself.
Admins set other users' passwords with netdisk admin user passwd NAME.`,
		Example: `  netdisk passwd                                  # asks for the current and the new password
  NETDISK_PASSWORD=old NETDISK_NEW_PASSWORD=new netdisk passwd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pw, err := ownNewPassword(cmd, newPass, cf.user)
			if err != nil {
				return err
			}
			if err := cf.client().ChangePassword(cmd.Context(), cf.password, pw); err != nil {
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "password of %s changed; signed out of the web page everywhere\n", cf.user)
			return nil
		},
	}
	cf.register(cmd)
	cmd.Flags().StringVar(&newPass, "new-password", "", "the new password (default $NETDISK_NEW_PASSWORD; asked for on a terminal when absent)")
	return cmd
}

// ownNewPassword returns the new password of user from the flag or
// NETDISK_NEW_PASSWORD, else asks twice on a terminal so a typo does not
// lock the user out.
func ownNewPassword(cmd *cobra.Command, flagValue, user string) (string, error) {
	if flagValue == "" {
		flagValue = os.Getenv("NETDISK_NEW_PASSWORD")
	}
	if flagValue != "" {
		return flagValue, nil
	}
	if !stdinIsTerminal() {
		return "", errors.New("no new password given: use --new-password, set NETDISK_NEW_PASSWORD, or run on a terminal to be asked")
	}
	return askNewPassword(cmd.ErrOrStderr(), user)
}
