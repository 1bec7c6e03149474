package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"netdisk/client"
)

func init() { extraCommands = append(extraCommands, newFindCmd) }

// findPage is how many hits find asks for at a time: the server's most.
const findPage = 1000

func newFindCmd() *cobra.Command {
	var (
		cf      clientFlags
		under   string
		glob    bool
		limit   int
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "find PATTERN",
		Short: "Find files and folders by name, newest first",
		Long: `Find the files and folders of your drive whose names match PATTERN, newest
first, one path per line (like find). Names are compared without regard to
case. The server looks them up in an index, so this is quick on any drive.

PATTERN is a substring of the name (every character literal), or, when it
holds * or ?, a glob over the whole name: * is any run of characters (also
none), ? exactly one, every other character literal ("*.jpg", "IMG_20??_*").
--glob makes a pattern without them a glob too (an exact name, case aside);
--glob=false looks for * and ? literally.`,
		Example: `  netdisk find report
  netdisk find '*.jpg' --under /photos --limit 20
  netdisk find invoice --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all) or more", limit)
			}
			pattern := args[0]
			o := client.SearchOptions{Under: under, Glob: glob}
			if !cmd.Flags().Changed("glob") {
				o.Glob = strings.ContainsAny(pattern, "*?")
			}
			c := cf.client()
			ctx := cmd.Context()
			w := bufio.NewWriter(cmd.OutOrStdout())
			defer w.Flush()
			enc := newJSONLines(w)
			printed := 0
			for {
				o.Limit = findPage
				if limit > 0 {
					o.Limit = min(findPage, limit-printed)
				}
				page, err := c.Search(ctx, pattern, o)
				if err != nil {
					w.Flush()
					return cliError(ctx, err)
				}
				for _, n := range page.Hits {
					if jsonOut {
						if err := enc.Encode(n); err != nil {
							return err
						}
					} else {
						fmt.Fprintln(w, n.Path)
					}
				}
				printed += len(page.Hits)
				if page.Next == "" || (limit > 0 && printed >= limit) {
					return w.Flush()
				}
				o.Cursor = page.Next
			}
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&under, "under", "", "search only below this remote folder (default: the whole drive)")
	f.BoolVar(&glob, "glob", false, "treat PATTERN as a glob (default: when it holds * or ?)")
	f.IntVar(&limit, "limit", 0, "print at most N matches, the newest (0: all)")
	f.BoolVar(&jsonOut, "json", false, "print each match as a JSON object on its own line (path, name, isDir, size, mode, mtime, fileHash)")
	return cmd
}
