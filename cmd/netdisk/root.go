package main

import (
	"errors"
	"fmt"

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
	// --version is a flag of our own rather than cobra's Version field:
	// cobra prints that through text/template, whose reflective method
	// calls keep the linker from dropping unused methods (the binary grew
	// by 40% and the daemon's memory with it).
	var version bool
	root := &cobra.Command{
		Use:           "netdisk",
		Short:         "netdisk — a self-hosted network drive (WebDAV, FUSE, chunked uploads)",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), readBuildVersion())
				return err
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolVarP(&version, "version", "v", false, "print the version this binary was built from")
	root.AddCommand(newServeCmd())
	for _, add := range extraCommands {
		root.AddCommand(add())
	}
	root.SetArgs(args)
	err := root.Execute()
	if te := certError(err); te != nil {
		// Whatever a command made of it: a certificate refused is told as
		// such, with its fix.
		return te
	}
	return err
}

// extraCommands are registered by the files of other subcommands (admin,
// push, pull, mount…), so each lives in its own file without touching this one.
var extraCommands []func() *cobra.Command
