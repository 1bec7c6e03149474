package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

func init() { extraCommands = append(extraCommands, newLsCmd) }

func newJSONLines(w io.Writer) *json.Encoder { return json.NewEncoder(w) }

func newLsCmd() *cobra.Command {
	var (
		cf      clientFlags
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "ls [REMOTE]",
		Short: "List a remote directory (or describe a file)",
		Long: `List a remote directory (or describe a file): size, modification time and name of
each entry, by name. A large folder is read a page at a time and printed as it comes.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := "/"
			if len(args) == 1 {
				p = args[0]
			}
			c := cf.client()
			ctx := cmd.Context()
			n, err := c.Stat(ctx, p)
			if err != nil {
				return cliError(ctx, err)
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			var w lsWriter = &lsText{w: out}
			if jsonOut {
				w = &lsJSON{w: out}
			}
			if !n.IsDir {
				w.page([]apitype.Node{n})
			} else if err := c.ListPages(ctx, p, 0, func(ns []apitype.Node) error {
				w.page(ns)
				return out.Flush()
			}); err != nil {
				out.Flush()
				return cliError(ctx, err)
			}
			w.end()
			return out.Flush()
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the entries as a JSON array")
	return cmd
}

// lsWriter prints a listing a page at a time: nothing waits for the end of
// the folder, so a folder of any size prints at once and in little memory.
type lsWriter interface {
	page(ns []apitype.Node)
	end()
}

// lsText prints one line per entry in fixed columns (a table aligned on the
// whole folder would have to hold it).
type lsText struct{ w io.Writer }

func (l *lsText) page(ns []apitype.Node) {
	for _, e := range ns {
		name, size := e.Name, ibytes(e.Size)
		switch {
		case e.IsDir:
			name, size = name+"/", "-"
		case e.IsSymlink():
			name = name + " -> " + e.Target // as ls -l shows a link
		}
		fmt.Fprintf(l.w, "%-10s  %s  %s\n", size, e.MTime.Local().Format(time.DateTime), name)
	}
}

func (l *lsText) end() {}

// lsJSON prints the entries as one indented JSON array, entry by entry.
type lsJSON struct {
	w     io.Writer
	count int
}

func (l *lsJSON) page(ns []apitype.Node) {
	for _, e := range ns {
		b, _ := json.MarshalIndent(e, "  ", "  ")
		if l.count == 0 {
			io.WriteString(l.w, "[\n  ")
		} else {
			io.WriteString(l.w, ",\n  ")
		}
		l.w.Write(b)
		l.count++
	}
}

func (l *lsJSON) end() {
	if l.count == 0 {
		io.WriteString(l.w, "[]\n")
		return
	}
	io.WriteString(l.w, "\n]\n")
}
