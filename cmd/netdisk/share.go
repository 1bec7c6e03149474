package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

func init() { extraCommands = append(extraCommands, newShareCmd) }

func newShareCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "share",
		Short: "Share files and folders: public links, and shares with users and groups",
		Long: `A public link lets whoever holds its URL, without an account, reach one file
or folder of yours: download it (a folder: browse it, download a file or the
whole folder as a zip), or, with --upload-only, only drop files into the
folder (a file drop: its page takes files and shows none, and a taken name
gets "name (2).ext"), or, with --read-write, also upload, rename and delete
there, on the page and over WebDAV (deletes go to your trash). Bytes sent
through a link count in your quota. It follows the file or folder when
you move or rename it, and ends when you delete it, when it expires, or when
you revoke it (netdisk share rm), on every node at once.

The URL holds a random token, shown once, when the link is made, and stored
only hashed.

A share with a user or a group (share user, share group) puts the file or
folder in their own drive, read-only or, with --write, writable; share users
lists them, share unshare revokes one, and a recipient leaves one with share
leave.`,
		Example: `  netdisk share link /photos/2024 --password 'p' --expire 7d
  netdisk share link /inbox --upload-only
  netdisk share ls
  netdisk share rm 3
  netdisk share user /projects/report bob --write
  netdisk share group /projects team`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cf.register(cmd)
	cmd.AddCommand(newShareLinkCmd(&cf), newShareLsCmd(&cf), newShareRmCmd(&cf))
	addUserShareCmds(cmd, &cf)
	return cmd
}

func newShareLinkCmd(cf *clientFlags) *cobra.Command {
	var (
		password, expire      string
		uploadOnly, readWrite bool
		maxDownloads          int64
	)
	cmd := &cobra.Command{
		Use:   "link PATH",
		Short: "Make a public link to a file or folder and print its URL (shown this once only)",
		Long: `Make a public link to PATH and print its URL, BASE/s/TOKEN, alone on stdout.
The same link is a WebDAV folder at BASE/public.php/dav/files/TOKEN/ (user:
the token; password: the link's, or empty), for rclone, davfs2 and file
managers.

--expire takes a duration (7d, 36h) from now or a date: YYYY-MM-DD (the link
works through that day, local time) or RFC 3339. --max-downloads counts file
downloads (a zip of a folder is one).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := apitype.NewLink{Path: args[0], Password: password, MaxDownloads: maxDownloads, Permission: apitype.LinkRead}
			switch {
			case uploadOnly && readWrite:
				return &exitError{code: exitUsage, err: fmt.Errorf("--upload-only and --read-write exclude each other")}
			case uploadOnly:
				req.Permission = apitype.LinkUpload
			case readWrite:
				req.Permission = apitype.LinkReadWrite
			}
			if maxDownloads < 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("--max-downloads %d: want 0 (no limit) or more", maxDownloads)}
			}
			if expire != "" {
				t, err := parseExpiry(expire, time.Now())
				if err != nil {
					return &exitError{code: exitUsage, err: err}
				}
				req.Expires = &t
			}
			l, err := cf.client().AddLink(cmd.Context(), req)
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			// The URL alone on stdout, for scripts; the rest apart.
			fmt.Fprintln(cmd.OutOrStdout(), l.URL)
			fmt.Fprintf(cmd.ErrOrStderr(), "link %d to %s (%s) made; the URL is not shown again\n", l.ID, l.Path, l.Permission)
			return nil
		},
	}
	cmd.Flags().StringVar(&password, "password", "", "a password the link asks for")
	cmd.Flags().StringVar(&expire, "expire", "", "when the link ends: a duration from now (7d, 36h) or a date (YYYY-MM-DD, RFC 3339)")
	cmd.Flags().BoolVar(&uploadOnly, "upload-only", false, "a file drop (folders only): it accepts files and never lists nor serves any")
	cmd.Flags().BoolVar(&readWrite, "read-write", false, "also upload, rename and delete inside the folder (folders only)")
	cmd.Flags().Int64Var(&maxDownloads, "max-downloads", 0, "end the link after this many downloads (0: no limit)")
	return cmd
}

// parseExpiry reads --expire: a duration from now (parseDays: 7d, 36h), a
// date (the link works through that day, local time) or RFC 3339.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, err := parseDays(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--expire %q: want a positive duration such as 7d or 36h", s)
		}
		return now.Add(d), nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t.AddDate(0, 0, 1), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--expire %q: want a duration (7d, 36h), a date (YYYY-MM-DD) or RFC 3339", s)
}

func newShareLsCmd(cf *clientFlags) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your public links with their use",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ls, err := cf.client().Links(cmd.Context())
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if asJSON {
				if ls == nil {
					ls = []apitype.Link{}
				}
				return writeJSON(cmd.OutOrStdout(), ls)
			}
			const day = "2006-01-02 15:04"
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tPATH\tPERMISSION\tPASSWORD\tEXPIRES\tDOWNLOADS\tLAST USE")
			for _, l := range ls {
				expires, last, pw := "never", "never", "no"
				if l.Expires != nil {
					expires = l.Expires.Local().Format(day)
				}
				if l.LastUse != nil {
					last = l.LastUse.Local().Format(day)
				}
				if l.Password {
					pw = "yes"
				}
				downloads := strconv.FormatInt(l.Downloads, 10)
				if l.MaxDownloads > 0 {
					downloads += "/" + strconv.FormatInt(l.MaxDownloads, 10)
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", l.ID, l.Path, l.Permission, pw, expires, downloads, last)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func newShareRmCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"revoke"},
		Short:   "Revoke a public link (on every node, at once)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(strings.TrimSpace(args[0]), 10, 64)
			if err != nil || id <= 0 {
				return &exitError{code: exitUsage, err: fmt.Errorf("%q is not a link id (netdisk share ls lists them)", args[0])}
			}
			if err := cf.client().RemoveLink(cmd.Context(), id); err != nil {
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "link %d revoked\n", id)
			return nil
		},
	}
}
