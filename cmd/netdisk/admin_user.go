package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

// The password flag of `user add` and `user passwd` is the target user's: it
// shadows the connection's --password there, so the admin's own password comes
// from NETDISK_PASSWORD (or a prompt) on those two commands.
const targetPasswordNote = `Here --password is the password of the user being changed; your own (the
admin's) comes from NETDISK_PASSWORD, or you are asked for it on a terminal.
Without --password you are asked for the new one twice, without echo.`

func newAdminUserCmd(env *adminEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Add, list, delete users; change their password or quota",
		Example: `  netdisk admin user add alice --password 'correct horse' --quota 10GiB
  netdisk admin user list --json
  netdisk admin user quota alice 500GB
  netdisk admin user passwd alice
  netdisk admin user del alice`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newUserAddCmd(env), newUserListCmd(env), newUserDelCmd(env), newUserPasswdCmd(env), newUserQuotaCmd(env))
	return cmd
}

func newUserAddCmd(env *adminEnv) *cobra.Command {
	var (
		password string
		quota    string
		admin    bool
	)
	cmd := &cobra.Command{
		Use:   "add NAME",
		Short: "Create a user with a private drive",
		Long: `Create a user. NAME may hold letters, digits and - _ . @ (up to 64).
--quota bounds the bytes of their files (0 or "unlimited", the default: no limit).

` + targetPasswordNote,
		Example: `  netdisk admin user add alice --password 'correct horse' --quota 10GiB
  netdisk admin user add bob --quota 500MB        # asks for bob's password
  netdisk admin user add carol --admin --password s3cret`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			q, err := parseSize(quota)
			if err != nil {
				return fmt.Errorf("--quota: %w", err)
			}
			pw, c, err := env.newPasswordClient(cmd, password, name)
			if err != nil {
				return err
			}
			u, err := c.AdminAddUser(cmd.Context(), apitype.NewUser{Name: name, Password: pw, Admin: admin, Quota: q})
			if err != nil {
				return err
			}
			role := "user"
			if u.Admin {
				role = "admin"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "added %s %s (quota %s)\n", role, u.Name, formatQuota(u.Quota))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&password, "password", "", "the new user's password (asked for on a terminal when absent)")
	f.StringVar(&quota, "quota", "unlimited", "quota, e.g. 500MB, 10GiB, 1.5TB; 0 or unlimited for none")
	f.BoolVar(&admin, "admin", false, "give the user admin rights")
	return cmd
}

func newUserListCmd(env *adminEnv) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List users with their quota and usage",
		Long: `List users: name, admin rights, quota, bytes used by finished files, bytes
of the files in their trash and of their files' versions (neither counts in the
quota), bytes held by unfinished uploads, and when the user was created. A
version is counted at its whole size, though it shares the chunks that did not
change with its file.`,
		Example: `  netdisk admin user list
  netdisk admin user list --json | jq '.[] | select(.admin)'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			us, err := c.AdminUsers(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				if us == nil {
					us = []apitype.AdminUser{}
				}
				return writeJSON(cmd.OutOrStdout(), us)
			}
			printUsers(cmd.OutOrStdout(), us)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (sizes in bytes)")
	return cmd
}

func printUsers(w io.Writer, us []apitype.AdminUser) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADMIN\tQUOTA\tUSED\tTRASH\tVERSIONS\tUNFINISHED\tUPLOADING\tCREATED")
	for _, u := range us {
		admin := "no"
		if u.Admin {
			admin = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", u.Name, admin, formatQuota(u.Quota), ibytes(u.Finished),
			ibytes(u.Trash), ibytes(u.Versions), ibytes(u.Unfinished), ibytes(u.Uploading), u.Created.Local().Format("2006-01-02 15:04"))
	}
	tw.Flush()
}

func newUserDelCmd(env *adminEnv) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:     "del NAME",
		Aliases: []string{"delete", "rm"},
		Short:   "Delete a user and all their files",
		Long: `Delete a user with all their files. Chunks no one else references are freed
by the next gc. You cannot delete your own account nor the last admin.
On a terminal you are asked to confirm (skip with --yes); without a terminal
(a script, a pipe) --yes is required.`,
		Example: `  netdisk admin user del alice
  netdisk admin user del alice --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if !yes && !stdinIsTerminal() {
				// Deleting a user cannot be undone: a script must say so
				// itself rather than have the missing prompt taken as a yes.
				return &exitError{code: exitUsage, err: fmt.Errorf("not deleting user %q without confirmation: stdin is not a terminal to ask on (add --yes)", name)}
			}
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			if !yes {
				ok, err := confirm(cmd, fmt.Sprintf("Delete user %q and all their files?", name))
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("not deleted")
				}
			}
			if err := c.AdminDeleteUser(cmd.Context(), name); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted user %s (run `netdisk admin gc` to free their chunks now)\n", name)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func newUserPasswdCmd(env *adminEnv) *cobra.Command {
	var password string
	cmd := &cobra.Command{
		Use:   "passwd NAME",
		Short: "Set a user's password",
		Long:  "Set a user's password.\n\n" + targetPasswordNote,
		Example: `  netdisk admin user passwd alice --password 'new secret'
  netdisk admin user passwd alice                 # asks twice`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			pw, c, err := env.newPasswordClient(cmd, password, name)
			if err != nil {
				return err
			}
			if err := c.AdminSetPassword(cmd.Context(), name, pw); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "password of %s changed\n", name)
			return nil
		},
	}
	cmd.Flags().StringVar(&password, "password", "", "the new password (asked for on a terminal when absent)")
	return cmd
}

func newUserQuotaCmd(env *adminEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota NAME SIZE",
		Short: "Set a user's quota (0 or unlimited for none)",
		Long: `Set the total bytes a user's files may hold. Lowering it below what they
already use keeps their files but refuses new uploads until they free space.`,
		Example: `  netdisk admin user quota alice 10GiB
  netdisk admin user quota alice 1.5TB
  netdisk admin user quota alice unlimited`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := parseSize(args[1])
			if err != nil {
				return err
			}
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			u, err := c.AdminSetQuota(cmd.Context(), args[0], q)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "quota of %s set to %s (uses %s)\n", u.Name, formatQuota(u.Quota), ibytes(u.Finished+u.Unfinished))
			return nil
		},
	}
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
