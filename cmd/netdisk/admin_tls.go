package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"netdisk/internal/tlsconf"
)

// newAdminTLSCmd prints the fingerprint clients pin. It reads the
// certificate file on the server's machine rather than asking the daemon:
// a fingerprint fetched over the connection it is meant to verify would
// prove nothing.
func newAdminTLSCmd() *cobra.Command {
	var data, cert string
	cmd := &cobra.Command{
		Use:   "tls",
		Short: "Print the SHA-256 fingerprint of the daemon's certificate (for clients' --tls-fingerprint)",
		Long: `Print the SHA-256 fingerprint of the certificate 'netdisk serve' serves, read
from its file on this machine: the self-signed one of --data (--tls-self-signed),
or the file given with --cert. Clients pin it with --tls-fingerprint or
NETDISK_TLS_FINGERPRINT. No daemon is contacted and no password is needed.`,
		Example: `  netdisk admin tls --data ./netdisk-data
  netdisk admin tls --cert /etc/letsencrypt/live/drive.example.org/fullchain.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cert == "" {
				cert, _ = tlsconf.SelfSignedFiles(data)
			}
			b, err := os.ReadFile(cert)
			if errors.Is(err, os.ErrNotExist) && !cmd.Flags().Changed("cert") {
				return fmt.Errorf("no self-signed certificate in %s: 'netdisk serve --tls-self-signed --data %s' makes it at its first start", data, data)
			}
			if err != nil {
				return err
			}
			block, _ := pem.Decode(b)
			if block == nil || block.Type != "CERTIFICATE" {
				return fmt.Errorf("%s: no PEM certificate", cert)
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return fmt.Errorf("%s: %w", cert, err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", tlsconf.Fingerprint(c.Raw))
			return err
		},
	}
	cmd.Flags().StringVar(&data, "data", "./netdisk-data", "the daemon's data directory")
	cmd.Flags().StringVar(&cert, "cert", "", "a certificate file (the daemon's --tls-cert) instead of the self-signed one")
	return cmd
}
