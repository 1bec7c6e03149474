package main

import (
	"github.com/spf13/cobra"

	"netdisk/client"
)

// clientFlags are the connection flags shared by every client-side command;
// empty values fall back to NETDISK_SERVER, NETDISK_USER and NETDISK_PASSWORD.
type clientFlags struct {
	server, user, password string
}

func (f *clientFlags) register(cmd *cobra.Command) {
	p := cmd.PersistentFlags()
	p.StringVar(&f.server, "server", "", "daemon URL (default $NETDISK_SERVER or "+client.DefaultServer+")")
	p.StringVar(&f.user, "user", "", "user name (default $NETDISK_USER)")
	p.StringVar(&f.password, "password", "", "password (default $NETDISK_PASSWORD)")
}

func (f *clientFlags) client() *client.Client { return client.New(f.server, f.user, f.password) }
