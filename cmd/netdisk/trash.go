package main

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/errs"
)

func init() { extraCommands = append(extraCommands, newTrashCmd) }

func newTrashCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "trash",
		Short: "List, restore and delete for good what you deleted",
		Long: `Whatever you delete (netdisk rm, WebDAV DELETE, the mount, the web page, a
move or copy that replaces a folder) waits in your trash: a folder as one
item with all it held. The trash does not count in your quota. Items are
deleted for good after the daemon's --trash-retention (30 days by default),
or earlier, oldest first, when your history outgrows its --history-share.

A restore puts an item back where it was, recreating missing folders; when
that name is taken it comes back as "name (restored).ext" (then
"name (restored 2).ext", …) and says so. It never replaces anything.`,
		Example: `  netdisk trash ls
  netdisk trash restore /docs/report.pdf     # the newest item deleted there
  netdisk trash restore 42                   # an item by its id
  netdisk trash rm 42                        # delete item 42 for good
  netdisk trash empty --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cf.register(cmd)

	var asJSON bool
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the trash, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := cf.client()
			items := []apitype.TrashItem{}
			for before := int64(0); ; {
				page, err := c.Trash(cmd.Context(), before, 0)
				if err != nil {
					return cliError(cmd.Context(), err)
				}
				items = append(items, page.Items...)
				if page.Next == 0 {
					break
				}
				before = page.Next
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), items)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tDELETED\tSIZE\tPATH")
			for _, it := range items {
				p := it.Path
				if it.IsDir {
					p += "/"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", it.ID, it.Deleted.Local().Format("2006-01-02 15:04"), ibytes(it.Size), p)
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")

	restore := &cobra.Command{
		Use:   "restore ITEM|PATH",
		Short: "Put an item back where it was (by id, or the newest deleted at PATH)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, path, err := trashArg(args[0])
			if err != nil {
				return err
			}
			r, err := cf.client().RestoreTrash(cmd.Context(), id, path)
			if err != nil {
				if client.KindOf(err) == errs.NotFound {
					return fmt.Errorf("%s: not in the trash", args[0])
				}
				return cliError(cmd.Context(), err)
			}
			if r.Renamed {
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s as %s (the name was taken)\n", r.Original, r.Path)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s\n", r.Path)
			}
			return nil
		},
	}
	rm := &cobra.Command{
		Use:     "rm ITEM",
		Aliases: []string{"del"},
		Short:   "Delete an item of the trash for good",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return fmt.Errorf("%q: want an item id (netdisk trash ls lists them)", args[0])
			}
			if err := cf.client().ExpungeTrash(cmd.Context(), id); err != nil {
				if client.KindOf(err) == errs.NotFound {
					return fmt.Errorf("%s: not in the trash", args[0])
				}
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "item %d deleted for good\n", id)
			return nil
		},
	}
	var yes bool
	empty := &cobra.Command{
		Use:   "empty",
		Short: "Delete everything in the trash for good",
		Long: `Delete every item of your trash for good. On a terminal you are asked to
confirm (skip with --yes); without a terminal (a script, a pipe) --yes is
required.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes && !stdinIsTerminal() {
				// Emptying cannot be undone: a script must say so itself.
				return &exitError{code: exitUsage, err: fmt.Errorf("not emptying the trash without confirmation: stdin is not a terminal to ask on (add --yes)")}
			}
			if !yes {
				ok, err := confirm(cmd, "Delete everything in your trash for good?")
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("not emptied")
				}
			}
			n, err := cf.client().EmptyTrash(cmd.Context())
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d item(s) deleted for good\n", n)
			return nil
		},
	}
	empty.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.AddCommand(ls, restore, rm, empty)
	return cmd
}

// trashArg reads a restore's argument: an item id, or the path an item was
// deleted at (anything starting with "/").
func trashArg(s string) (int64, string, error) {
	if strings.HasPrefix(s, "/") {
		return 0, s, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, "", fmt.Errorf("%q: want an item id (netdisk trash ls lists them) or the path it was deleted at, starting with /", s)
	}
	return id, "", nil
}
