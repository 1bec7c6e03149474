package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"netdisk/apitype"
)

func init() { extraCommands = append(extraCommands, newAsyncCmd) }

func newAsyncCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "async",
		Short: "Deliver files to agents asynchronously (async add / async status)",
	}
	cf.register(cmd)

	var (
		addReq  apitype.AsyncAdd
		addJSON bool
	)
	add := &cobra.Command{
		Use:   "add PATH --agent AGENT [--container C] --target-dir DIR",
		Short: "Ask for a file of yours to be delivered to one of your agents",
		Long: `Ask for a file of yours to be delivered to one of your agents (netdisk agent), into
DIR under the agent's --dir. Requests for the same file within one time window (the
daemon's --async-window) are delivered together as one job. Prints the task ID.
An agent that has never run (netdisk agent) is refused, unless --wait-for-agent.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			addReq.Path = args[0]
			t, err := cf.client().AsyncAdd(cmd.Context(), addReq)
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if addJSON {
				return writeJSON(cmd.OutOrStdout(), t)
			}
			fmt.Fprintln(cmd.OutOrStdout(), t.TaskID)
			return nil
		},
	}
	add.Flags().StringVar(&addReq.Agent, "agent", "", "the agent's ID (required)")
	add.Flags().StringVar(&addReq.Container, "container", "", "the agent's container, if it serves one")
	add.Flags().StringVar(&addReq.TargetDir, "target-dir", "", "directory under the agent's --dir to put the file in")
	add.Flags().BoolVar(&addReq.WaitForAgent, "wait-for-agent", false, "accept an agent that has not connected yet (it will be started later)")
	add.Flags().BoolVar(&addJSON, "json", false, "print the task as JSON")
	_ = add.MarkFlagRequired("agent")

	var stJSON bool
	status := &cobra.Command{
		Use:   "status TASKID",
		Short: "Show a task's status (Pending, Running, Downloading N%, Success, Failed, Timeout) and its job",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := cf.client().AsyncStatus(cmd.Context(), args[0])
			if err != nil {
				return cliError(cmd.Context(), err)
			}
			if stJSON {
				return writeJSON(cmd.OutOrStdout(), t)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\tjob %s\n", statusText(t), t.JobID)
			if t.Message != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", t.Message)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&stJSON, "json", false, "print the task as JSON")
	cmd.AddCommand(add, status)
	return cmd
}

// statusText is a task's status as people read it: "Downloading 45%" while
// its agent reports progress.
func statusText(t apitype.AsyncTask) string {
	if t.Status == "Downloading" && t.Size > 0 {
		return fmt.Sprintf("Downloading %d%%", t.Bytes*100/t.Size)
	}
	return t.Status
}
