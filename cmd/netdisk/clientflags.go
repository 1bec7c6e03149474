package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"netdisk/client"
	"netdisk/internal/tlsconf"
)

// clientFlags are the connection flags shared by every client-side command;
// empty values fall back to NETDISK_SERVER, NETDISK_USER and NETDISK_PASSWORD.
type clientFlags struct {
	server, user, password string
	// caFile and fingerprint are the TLS verification settings
	// (tlsconf.ClientOptions), tls what they built (nil: Go's defaults).
	caFile, fingerprint string
	tls                 *tls.Config
	// passwordFlags names the flags that give this command a password, for
	// the message that none was given ("--password" unless the command has
	// more).
	passwordFlags string
}

// register adds the connection flags to cmd and settles the credentials
// before cmd (or any command under it) runs: see credentials. Every client
// command gets them here, so none can send a request without them.
func (f *clientFlags) register(cmd *cobra.Command) {
	f.addFlags(cmd)
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return f.credentials(c, "") }
}

// addFlags adds the connection flags alone, for commands that settle the
// credentials themselves (admin: only its calls to the daemon need them,
// after their own prompts; mount: its --password-file comes first).
func (f *clientFlags) addFlags(cmd *cobra.Command) {
	p := cmd.PersistentFlags()
	p.StringVar(&f.server, "server", "", "daemon URL (default $NETDISK_SERVER or "+client.DefaultServer+")")
	p.StringVar(&f.user, "user", "", "user name (default $NETDISK_USER)")
	p.StringVar(&f.password, "password", "", "password (default $NETDISK_PASSWORD)")
	p.StringVar(&f.caFile, "ca-file", "", "PEM certificates trusted beside the system's for an https:// server (default $NETDISK_CA_FILE)")
	p.StringVar(&f.fingerprint, "tls-fingerprint", "", "accept only the https:// server certificate with this SHA-256 ('netdisk admin tls' on the server prints it; default $NETDISK_TLS_FINGERPRINT)")
}

// loadTLS builds the verification settings once, before any request: a
// CA file that does not read is an error now, not a fallback to Go's
// defaults.
func (f *clientFlags) loadTLS() error {
	if f.caFile == "" {
		f.caFile = os.Getenv("NETDISK_CA_FILE")
	}
	if f.fingerprint == "" {
		f.fingerprint = os.Getenv("NETDISK_TLS_FINGERPRINT")
	}
	cfg, err := tlsconf.Client(tlsconf.ClientOptions{CAFile: f.caFile, Fingerprint: f.fingerprint})
	if err != nil {
		return err
	}
	f.tls = cfg
	return nil
}

// credentials fills in the user name (--user, NETDISK_USER, else
// defaultUser) and the password (--password, NETDISK_PASSWORD, else asked
// for on the terminal behind stdin), or fails before anything is sent. A
// request without a user name or with an empty password can never sign in:
// sent anyway, it was answered "wrong user name or password" and counted
// as a failed login against the account, which the daemon's throttle locks
// after a few.
func (f *clientFlags) credentials(cmd *cobra.Command, defaultUser string) error {
	if err := f.loadTLS(); err != nil {
		return err
	}
	if f.user == "" {
		f.user = os.Getenv("NETDISK_USER")
	}
	if f.user == "" {
		f.user = defaultUser
	}
	if f.user == "" {
		return errors.New("no user name given: use --user or set NETDISK_USER")
	}
	if f.password == "" {
		f.password = os.Getenv("NETDISK_PASSWORD")
	}
	if f.password != "" {
		return nil
	}
	flags := f.passwordFlags
	if flags == "" {
		flags = "--password"
	}
	noPassword := fmt.Errorf("no password given for %q: set NETDISK_PASSWORD, use %s, or run on a terminal to be asked", f.user, flags)
	if !stdinIsTerminal() {
		return noPassword
	}
	p, err := readSecret(cmd.ErrOrStderr(), fmt.Sprintf("Password for %s at %s: ", f.user, f.client().Server))
	if err != nil {
		return err
	}
	if p == "" {
		return noPassword
	}
	f.password = p
	return nil
}

func (f *clientFlags) client() *client.Client {
	c := client.New(f.server, f.user, f.password)
	c.SetTLS(f.tls)
	return c
}
