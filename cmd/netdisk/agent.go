package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"netdisk/client"
)

func init() { extraCommands = append(extraCommands, newAgentCmd) }

func newAgentCmd() *cobra.Command {
	var (
		cf clientFlags
		o  client.AgentOptions
	)
	cmd := &cobra.Command{
		Use:   "agent --id AGENT [--container C] --dir DIR",
		Short: "Run an async download agent: receive files into DIR",
		Long: `Run an async download agent of the logged-in user. It registers with the daemon,
waits for work over a Server-Sent Events stream, fetches each file (content-addressed,
resumable, hash-verified; agents sharing --cache on one host transfer a file once),
writes it atomically into the requested target directory under DIR (never outside
it) and reports each outcome, telling its progress while it downloads. An outcome is
kept in --state until the daemon has it: retried while the daemon or its store is
away (until the job's deadline) and sent again after a restart of the agent. Running
the agent once registers it: until then, async add refuses targets naming it (unless
--wait-for-agent). Stops on SIGINT/SIGTERM.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Cache == "" {
				if d, err := os.UserCacheDir(); err == nil {
					o.Cache = filepath.Join(d, "netdisk", "agent-cache")
				}
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return cliError(ctx, cf.client().RunAgent(ctx, o))
		},
	}
	cf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.ID, "id", "", "this agent's ID among your agents (required)")
	f.StringVar(&o.Container, "container", "", "the container this agent serves (targets name it)")
	f.StringVar(&o.Dir, "dir", "", "root directory: every target directory is under it (required)")
	f.StringVar(&o.Cache, "cache", "", "cache folder shared by the agents of this host (default: the user cache dir's netdisk/agent-cache)")
	f.StringVar(&o.State, "state", "", "this agent's state folder, one per agent: outcomes not yet taken by the daemon (default: DIR/.netdisk-agent)")
	f.IntVar(&o.Parallel, "parallel", 4, "deliveries at once")
	_ = cmd.MarkFlagRequired("id")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}
