// Command netdisk is the self-hosted network drive: the daemon (serve), the
// admin tool (admin) and the clients (push, pull, mount, …).
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := Run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "netdisk:", err)
		os.Exit(exitCode(err))
	}
}
