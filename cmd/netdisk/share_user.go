package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

// addUserShareCmds adds the shares between users to the share command.
func addUserShareCmds(share *cobra.Command, cf *clientFlags) {
	var write bool
	with := func(kind string) *cobra.Command {
		c := &cobra.Command{
			Use:   kind + " PATH " + map[string]string{"user": "USER", "group": "GROUP"}[kind],
			Short: "Share a file or folder with a " + kind + " (read-only unless --write)",
			Long: `The file or folder appears in the recipient's root under its name (a free
variant of it when the name is taken there); they may rename or move it in
their tree, which changes only their view. Read-only shares refuse writes
(403 over WebDAV and the API, EROFS on a mount); with --write the recipient's
writes count in your quota and keep your trash and versions. Run again with
or without --write to change the permission; revoke with share unshare ID
(ids in share users).` + map[string]string{"user": "", "group": `

A group's share follows its members: one added later gets it, one removed
loses it at their next request (groups: netdisk admin group).`}[kind],
			Example: "  netdisk share " + kind + " /projects/report " + map[string]string{"user": "bob", "group": "team"}[kind] + " --write",
			Args:    cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				req := apitype.NewUserShare{Path: args[0], Write: write}
				if kind == "user" {
					req.User = args[1]
				} else {
					req.Group = args[1]
				}
				s, err := cf.client().ShareWith(cmd.Context(), req)
				if err != nil {
					return cliError(cmd.Context(), err)
				}
				perm := "read-only"
				if s.Write {
					perm = "read-write"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s shared with %s %s, %s (share %d)\n", s.Path, kind, s.To, perm, s.ID)
				return nil
			},
		}
		c.Flags().BoolVar(&write, "write", false, "let the recipient change, add and delete")
		return c
	}
	var asJSON bool
	users := &cobra.Command{
		Use:   "users",
		Short: "List what you share with users and groups, and what they share with you",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := cf.client().UserShares(cmd.Context())
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), l)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPATH\tWITH\tPERMISSION")
			for _, s := range l.Shares {
				to := s.To
				if s.Group {
					to = "group " + to
				}
				p := s.Path
				if p == "" {
					p = "(in the trash)"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.ID, p, to, permName(s.Write))
			}
			if len(l.SharedWithMe) > 0 {
				fmt.Fprintln(tw, "\nSHARED WITH ME\tOWNER\tPERMISSION")
				for _, m := range l.SharedWithMe {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Path, m.Owner, permName(m.Write))
				}
			}
			return tw.Flush()
		},
	}
	users.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	unshare := &cobra.Command{
		Use:   "unshare ID",
		Short: "Revoke a share with a user or group (ids in share users): gone for them at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("share id %q: want a number (see share users)", args[0])}
			}
			if err := cf.client().Unshare(cmd.Context(), id); err != nil {
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "share %d revoked\n", id)
			return nil
		},
	}
	leave := &cobra.Command{
		Use:   "leave PATH",
		Short: "Remove a share someone gave you from your tree (their files stay)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.client().LeaveShare(cmd.Context(), args[0]); err != nil {
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "left the share at %s\n", args[0])
			return nil
		},
	}
	share.AddCommand(with("user"), with("group"), users, unshare, leave)
}

func permName(write bool) string {
	if write {
		return "read-write"
	}
	return "read-only"
}

func newAdminGroupCmd(env *adminEnv) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Manage groups of users (for netdisk share group)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	add := &cobra.Command{
		Use:   "add GROUP",
		Short: "Make a group",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			if err := c.AdminAddGroup(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "group %s added\n", args[0])
			return nil
		},
	}
	rm := &cobra.Command{
		Use:   "rm GROUP",
		Short: "Delete a group; what was shared with it is no longer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			if err := c.AdminRemoveGroup(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "group %s removed\n", args[0])
			return nil
		},
	}
	var asJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the groups with their members",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			gs, err := c.AdminGroups(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), gs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "GROUP\tMEMBERS")
			for _, g := range gs {
				fmt.Fprintf(tw, "%s\t%s\n", g.Name, joinNames(g.Members))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	member := &cobra.Command{
		Use:   "member",
		Short: "Add or remove a group's members",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	for _, add := range []bool{true, false} {
		verb, short := "add", "Add a user to a group: the group's shares appear in their root"
		if !add {
			verb, short = "rm", "Remove a user from a group: they lose its shares at their next request"
		}
		member.AddCommand(&cobra.Command{
			Use:   verb + " GROUP USER",
			Short: short,
			Args:  cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := env.client(cmd)
				if err != nil {
					return err
				}
				if err := c.AdminGroupMember(cmd.Context(), args[0], args[1], add); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "group %s: %s %sed\n", args[0], args[1], map[bool]string{true: "add", false: "remov"}[add])
				return nil
			},
		})
	}
	cmd.AddCommand(add, rm, ls, member)
	return cmd
}

func joinNames(ns []string) string {
	if len(ns) == 0 {
		return "-"
	}
	s := ns[0]
	for _, n := range ns[1:] {
		s += ", " + n
	}
	return s
}
