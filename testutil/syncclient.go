package testutil

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
)

// SyncClient runs a Nextcloud or ownCloud command-line client (bin, the path
// of nextcloudcmd or owncloudcmd) once over the local folder dir against the
// server at url as user:pass, and returns what it printed and its error (a
// non-zero exit is an *exec.ExitError). args come before the folder: more
// options, such as --uplimit.
//
// The clients keep settings and caches under HOME and the XDG folders: each
// synced folder gets a home of its own beside it (.home-NAME), so two
// folders synced from one test are two separate installations and nothing
// is read from the user running the tests. An empty exclude list beside it
// leaves only the clients' built-in and system exclusions.
func SyncClient(ctx context.Context, bin, dir, url, user, pass string, args ...string) ([]byte, error) {
	home := filepath.Join(filepath.Dir(dir), ".home-"+filepath.Base(dir))
	excl := filepath.Join(filepath.Dir(dir), ".exclude")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(excl, nil, 0o600); err != nil {
		return nil, err
	}
	argv := append([]string{"--non-interactive", "--exclude", excl, "--max-sync-retries", "1", "-u", user, "-p", pass}, args...)
	cmd := exec.CommandContext(ctx, bin, append(argv, dir, url)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "XDG_CACHE_HOME="+home)
	return cmd.CombinedOutput()
}
