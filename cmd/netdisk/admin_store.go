package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

func newAdminStatsCmd(env *adminEnv) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show users, files, logical and physical bytes, chunks and dedup ratio",
		Long: `Show store-wide figures. Logical bytes are the sizes of all users' files added
up; physical bytes are what the chunk store holds, each distinct chunk once.
The dedup ratio is logical / physical: 2.00 means every byte is stored once
for two files that hold it.`,
		Example: `  netdisk admin stats
  netdisk admin stats --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			s, err := c.AdminStats(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), s)
			}
			printStats(cmd.OutOrStdout(), s)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (sizes in bytes)")
	return cmd
}

func printStats(w io.Writer, s apitype.Stats) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	ratio := "-"
	if s.PhysicalBytes > 0 {
		ratio = fmt.Sprintf("%.2f", s.DedupRatio)
	}
	fmt.Fprintf(tw, "users\t%d\n", s.Users)
	fmt.Fprintf(tw, "files\t%d\n", s.Files)
	fmt.Fprintf(tw, "dirs\t%d\n", s.Dirs)
	fmt.Fprintf(tw, "logical\t%s\t(%d bytes)\n", ibytes(s.LogicalBytes), s.LogicalBytes)
	fmt.Fprintf(tw, "physical\t%s\t(%d bytes)\n", ibytes(s.PhysicalBytes), s.PhysicalBytes)
	fmt.Fprintf(tw, "chunks\t%d\n", s.Chunks)
	fmt.Fprintf(tw, "dedup ratio\t%s\n", ratio)
	tw.Flush()
}

func newAdminGCCmd(env *adminEnv) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Free chunks no file references any more",
		Long: `Collect garbage now (the daemon also does it every --gc-interval): remove
chunks that no file and no open upload references, and chunk files left
without a record by a crash. A chunk an upload or download is using is kept.`,
		Example: `  netdisk admin gc
  netdisk admin gc --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			r, err := c.AdminGC(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "freed %d chunk(s), %s; removed %d orphan chunk file(s); kept %d in use\n",
				r.Chunks, ibytes(r.Bytes), r.OrphanBlobs, r.SkippedInUse)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (sizes in bytes)")
	return cmd
}

func newAdminFsckCmd(env *adminEnv) *cobra.Command {
	var asJSON, noProgress bool
	cmd := &cobra.Command{
		Use:   "fsck",
		Short: "Re-hash every stored chunk; report missing or corrupt ones",
		Long: fmt.Sprintf(`Check the chunk store: read every chunk, re-hash it (SHA-256 and MD5) and
compare with its record. Missing, unreadable or corrupt chunks are listed.
Then the references of the history are checked: every trash item has its
files and every file in the trash its item ("trash"); every version belongs
to an existing file of its user, every chunk a version or a file (in the
trash too) lists has its record, and a version's chunks add up to its size
("history").
Progress is shown on a terminal (the check reads every stored byte).

Exit status: 0 all chunks are sound, %d problems were found, 1 the check
could not run.`, exitFsckProblems),
		Example: `  netdisk admin fsck
  netdisk admin fsck --json > fsck.json || echo "damaged chunks"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := env.client(cmd)
			if err != nil {
				return err
			}
			var progress func(done, total int64)
			errw := cmd.ErrOrStderr()
			showing := !noProgress && stderrIsTerminal()
			if showing {
				progress = func(done, total int64) {
					pct := 100.0
					if total > 0 {
						pct = float64(done) * 100 / float64(total)
					}
					fmt.Fprintf(errw, "\rchecking chunks: %d/%d (%.0f%%)", done, total, pct)
				}
			}
			r, err := c.AdminFsck(cmd.Context(), progress)
			if showing {
				fmt.Fprint(errw, "\r\033[K") // clear the progress line
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeJSON(out, r); err != nil {
					return err
				}
			} else {
				printFsck(out, r)
			}
			if len(r.Problems) > 0 {
				return &exitError{code: exitFsckProblems, err: fsckError(r)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noProgress, "no-progress", false, "do not show progress on a terminal")
	return cmd
}

// fsckError says what fsck found: chunks and references apart, since they
// call for different repairs.
func fsckError(r apitype.FsckResult) error {
	var chunks, refs int
	for _, p := range r.Problems {
		if p.SHA256 != "" {
			chunks++
		} else {
			refs++
		}
	}
	var said []string
	if chunks > 0 {
		said = append(said, fmt.Sprintf("%d of %d chunks missing or corrupt", chunks, r.Checked))
	}
	if refs > 0 {
		said = append(said, fmt.Sprintf("%d broken reference(s) in the trash or the versions", refs))
	}
	return fmt.Errorf("fsck: %s", strings.Join(said, ", "))
}

func printFsck(w io.Writer, r apitype.FsckResult) {
	if len(r.Problems) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PROBLEM\tCHUNK (SHA-256)\tDETAIL")
		for _, p := range r.Problems {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Problem, p.SHA256, p.Detail)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "checked %d chunk(s), %s sound; %d problem(s)\n", r.Checked, ibytes(r.Bytes), len(r.Problems))
}
