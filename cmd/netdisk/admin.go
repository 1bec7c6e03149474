package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"netdisk/client"
	"netdisk/errs"
	"netdisk/internal/bytesize"
	"netdisk/internal/tlsconf"
)

func init() { extraCommands = append(extraCommands, newAdminCmd) }

// exitFsckProblems is the status of `admin fsck` when it found damaged or
// missing chunks (1 stays "the command itself failed").
const exitFsckProblems = 2

// exitUsage is the status of a command refused for how it was called (a
// destructive one without --yes and no terminal to ask on): 2, the usage
// error of most tools, so a script can tell it from a failure of the call.
const exitUsage = 2

// adminEnv is what every admin subcommand shares: the connection flags.
type adminEnv struct {
	conn clientFlags
}

func newAdminCmd() *cobra.Command {
	env := &adminEnv{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage users and storage of a running daemon (admins only)",
		Long: `Manage a running netdisk daemon: users and their quotas, usage statistics,
garbage collection and integrity checks. Every call goes over the daemon's
HTTP API as an admin user.

Connection: --server, --user and --password, defaulting to NETDISK_SERVER
(else ` + client.DefaultServer + `), NETDISK_USER (else "admin") and
NETDISK_PASSWORD. Without a password you are asked for one on a terminal.

Sizes are written as people write them: 500MB, 10GiB, 1.5TB (0 or
"unlimited" for no limit).`,
		Example: `  export NETDISK_SERVER=http://127.0.0.1:8080 NETDISK_USER=admin NETDISK_PASSWORD=secret
  netdisk admin user add alice --password 'correct horse' --quota 10GiB
  netdisk admin user list
  netdisk admin stats
  netdisk admin fsck`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	env.conn.addFlags(cmd)
	cmd.AddCommand(newAdminUserCmd(env), newAdminStatsCmd(env), newAdminGCCmd(env), newAdminFsckCmd(env), newAdminMigrateCmd(), newAdminTLSCmd(), newAdminTrashCmd(env), newAdminGroupCmd(env))
	friendlyErrors(cmd)
	return cmd
}

// friendlyErrors wraps every RunE below cmd so API and network failures read
// as one clear line instead of Go's nested error chains.
func friendlyErrors(cmd *cobra.Command) {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error { return friendly(run(c, args)) }
	}
	for _, sub := range cmd.Commands() {
		friendlyErrors(sub)
	}
}

func friendly(err error) error {
	if err == nil {
		return nil
	}
	if te := certError(err); te != nil {
		return te
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		if ae.Code == "" && ae.Status == http.StatusBadRequest && strings.Contains(ae.Message, "HTTP request to an HTTPS server") {
			// Go's HTTPS server answering a plain request: the address is
			// right but its scheme is not, and nothing was served.
			return errors.New("the server speaks HTTPS only: use an https:// address in --server or NETDISK_SERVER")
		}
		// The server's code decides; its message is the detail.
		switch ae.Kind() {
		case errs.Unauthenticated, errs.Quota, errs.NoSpace:
			return errors.New(ae.Error())
		}
		return errors.New(ae.Message)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		reason := ue.Err.Error()
		var oe *net.OpError
		if errors.As(ue.Err, &oe) && oe.Err != nil {
			reason = oe.Err.Error()
		}
		u, _ := url.Parse(ue.URL)
		server := ue.URL
		if u != nil {
			server = u.Scheme + "://" + u.Host
		}
		return fmt.Errorf("server %s unreachable (%s): is `netdisk serve` running there? (--server or NETDISK_SERVER)", server, reason)
	}
	return err
}

// client returns a connection as the admin (user "admin" unless named),
// asking for the password on a terminal when neither the flag nor
// NETDISK_PASSWORD gives one (clientFlags.credentials).
func (e *adminEnv) client(cmd *cobra.Command) (*client.Client, error) {
	if err := e.conn.credentials(cmd, "admin"); err != nil {
		return nil, err
	}
	return e.conn.client(), nil
}

func stdinIsTerminal() bool  { return term.IsTerminal(int(os.Stdin.Fd())) }
func stderrIsTerminal() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// newPassword returns the --password value when given; otherwise it asks
// twice on a terminal, so a typo does not lock the user out.
func newPassword(cmd *cobra.Command, flagValue, name string) (string, error) {
	if cmd.Flags().Changed("password") {
		return flagValue, nil
	}
	if !stdinIsTerminal() {
		return "", fmt.Errorf("no password for %q: use --password (stdin is not a terminal to ask on)", name)
	}
	return askNewPassword(cmd.ErrOrStderr(), name)
}

// askNewPassword asks for user name's new password twice on the terminal,
// so a typo does not lock the user out.
func askNewPassword(w io.Writer, name string) (string, error) {
	p1, err := readSecret(w, fmt.Sprintf("New password for %s: ", name))
	if err != nil {
		return "", err
	}
	if p1 == "" {
		return "", errors.New("empty password")
	}
	p2, err := readSecret(w, "Repeat it: ")
	if err != nil {
		return "", err
	}
	if p1 != p2 {
		return "", errors.New("the passwords do not match")
	}
	return p1, nil
}

// newPasswordClient is what `user add` and `user passwd` start with: the
// new password of user name (newPassword), then a connection as the admin
// (client), asked in that order so the prompts read as one dialogue.
func (e *adminEnv) newPasswordClient(cmd *cobra.Command, flagValue, name string) (string, *client.Client, error) {
	pw, err := newPassword(cmd, flagValue, name)
	if err != nil {
		return "", nil, err
	}
	c, err := e.client(cmd)
	if err != nil {
		return "", nil, err
	}
	return pw, c, nil
}

// confirm asks a yes/no question on the terminal behind stdin; callers
// refuse before calling it when there is none (a missing answer is never a
// yes).
func confirm(cmd *cobra.Command, question string) (bool, error) {
	if !stdinIsTerminal() {
		return false, errors.New("stdin is not a terminal to ask on")
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// parseSize reads a size as people write it (500MB, 10GiB, 1.5TB, 1024);
// 0, "unlimited" and "none" mean no limit.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	switch t {
	case "0", "unlimited", "none":
		return 0, nil
	}
	n, err := humanize.ParseBytes(t)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("size %q: write it like 500MB, 10GiB or 1.5TB (0 or \"unlimited\" for no limit)", s)
	}
	return int64(n), nil
}

// formatQuota prints a quota total.
func formatQuota(q int64) string {
	if q <= 0 {
		return "unlimited"
	}
	return bytesize.Format(q)
}

// ibytes is every size the CLI prints: the product's one format
// (internal/bytesize), the units --quota and the other size flags take.
func ibytes(n int64) string { return bytesize.Format(max(n, 0)) }

// certError is the one line that says how to make a server's certificate
// trusted, when err is its verification failing; else nil.
func certError(err error) error {
	server := "the server"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			server = u.Scheme + "://" + u.Host
		}
	}
	return tlsconf.Explain(server, err)
}
