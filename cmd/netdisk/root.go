package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// exitError carries a specific exit status (e.g. fsck found problems).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}

// Run executes the command line; main only maps its error to an exit status.
func Run(args []string) error {
	root := &cobra.Command{
		Use:           "netdisk",
		Short:         "netdisk — a self-hosted network drive (WebDAV, FUSE, chunked uploads)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newServeCmd())
	for _, add := range extraCommands {
		root.AddCommand(add())
	}
	root.SetArgs(args)
	return root.Execute()
}

// extraCommands are registered by the files of other subcommands (admin,
// push, pull, mount…), so each lives in its own file without touching this one.
var extraCommands []func() *cobra.Command
