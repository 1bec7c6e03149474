package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newVersionCmd) }

// buildVersion is what this binary was built from, as the go command
// recorded it in the binary: the main module's version (a release tag, a
// pseudo-version naming the commit, or "(devel)" when the build had no
// version control to ask), the commit, its time and whether the working
// tree had uncommitted changes. Read from the binary itself, it cannot
// drift from the code the way a hand-kept constant does.
type buildVersion struct {
	Version, Revision, Time, Go string
	Modified                    bool
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the line `netdisk --version` prints, e.g.
// "netdisk v1.2.0 (revision 0123…, 2026-11-26T02:15:00Z, go1.26.8)".
func (v buildVersion) String() string {
	var details []string
	if v.Revision != "" {
		details = append(details, "revision "+v.Revision)
	}
	if v.Time != "" {
		details = append(details, v.Time)
	}
	if v.Modified {
		details = append(details, "modified")
	}
	details = append(details, v.Go)
	return fmt.Sprintf("netdisk %s (%s)", v.Version, strings.Join(details, ", "))
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version this binary was built from (as --version does)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), readBuildVersion())
			return err
		},
	}
}
