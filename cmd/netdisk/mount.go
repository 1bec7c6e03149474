package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"netdisk/internal/pprofserve"
	"netdisk/mount"
)

func init() { extraCommands = append(extraCommands, newMountCmd) }

// redialGrace is how long a call waits for a server that refuses
// connections before the mount counts it lost.
const redialGrace = 5 * time.Second

// envDaemonChild marks the detached child of `mount --daemon`; its fd 3 is a
// pipe on which it reports "ok" or the error once the mount is (not) ready.
const envDaemonChild = "NETDISK_MOUNT_CHILD"

func newMountCmd() *cobra.Command {
	var cf clientFlags
	var (
		cacheDir, cacheSize string
		passwordFile        string
		ttl, timeout        time.Duration
		daemon              bool
		prefetch            int
		sharedCache         bool
		node                string
		writeBack           bool
		pprofAddr           string
		logFile             string
	)
	cmd := &cobra.Command{
		Use:   "mount [--server URL] MOUNTPOINT",
		Short: "Mount your drive as a filesystem (FUSE)",
		Long: `Mount the user's drive at MOUNTPOINT. Runs in the foreground until Ctrl-C,
SIGTERM or 'fusermount3 -u MOUNTPOINT'; --daemon detaches once mounted.
Reads fetch only the chunks they touch into a local content-addressed cache
(run as root, the mount raises its kernel readahead to 1 MiB, the largest
FUSE read; otherwise the kernel sends reads of 128 KiB);
writes are staged locally and uploaded on close/fsync (fsync returns when the
server has committed).

--write-back makes close return once the data is staged and uploads in the
background (much faster for many small files). fsync still returns only when
the server has committed; this mount shows new files and content at once,
other clients once the upload lands; an upload error is logged and retried at
the next fsync, close or the unmount, which uploads everything still queued.

When the server cannot be reached (refused for 5 s, or no route), the mount
logs it once and stops waiting on it: stat, ls, reads of cached chunks and df
answer from what it last saw, other calls fail at once with "Host is down"
(EHOSTDOWN), and --write-back keeps taking files. It looks for the server
again after 1 s, then at growing intervals up to 15 s, logs its return once
and uploads what write-back kept.

Symbolic links are stored on the server as given and resolved by your
kernel, never by the server (a link to /etc/passwd reads your machine's
file); making one needs the server, reading one the mount has seen does not.
Hard links, extended attributes and device files are not stored.

The password comes from --password-file, NETDISK_PASSWORD or a prompt on a
terminal; --password works but shows in ps, and is warned about.

Several mounts (of one or several users, in containers of one host) sharing
one --cache-dir fetch each chunk once between them with --shared-cache: a
mount takes the server's pull lock on a chunk before fetching it, and the
others wait for it and read it from the shared cache. --node names the mount
(default HOSTNAME-PID).

--daemon writes the mount's log to --log-file, by default one file per mount
point in $XDG_STATE_HOME/netdisk (~/.local/state/netdisk), named after the
mount point (/home/alice/netdisk logs to mount-home-alice-netdisk.log). The
file is created 0600 and never followed through a symlink.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			size, err := humanize.ParseBytes(cacheSize)
			if err != nil {
				return fmt.Errorf("--cache-size: %w", err)
			}
			if err := mountPassword(cmd, &cf, passwordFile); err != nil {
				return err
			}
			if daemon && os.Getenv(envDaemonChild) == "" {
				return detach(args[0], cf.password, logFile)
			}
			lockNode := ""
			if sharedCache {
				if lockNode = node; lockNode == "" {
					host, _ := os.Hostname()
					lockNode = fmt.Sprintf("%s-%d", host, os.Getpid())
				}
			}
			if pprofAddr != "" {
				ps, err := pprofserve.Start(cmd.Context(), pprofAddr, slog.Default())
				if err != nil {
					return err
				}
				defer ps.Close()
			}
			return runMount(cmd.Context(), cf, args[0], cacheDir, int64(size), ttl, timeout, prefetch, lockNode, writeBack)
		},
	}
	cf.addFlags(cmd)
	cf.passwordFlags = "--password-file"
	f := cmd.Flags()
	defCache := filepath.Join(os.TempDir(), "netdisk-cache")
	if d, err := os.UserCacheDir(); err == nil {
		defCache = filepath.Join(d, "netdisk")
	}
	f.StringVar(&cacheDir, "cache-dir", defCache, "local chunk cache and staging directory")
	f.StringVar(&cacheSize, "cache-size", "1GiB", "chunk cache size (LRU eviction beyond it)")
	f.DurationVar(&ttl, "cache-ttl", time.Second, "how long names and attributes are trusted before asking the server again")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "per-operation timeout when the server does not answer (a refused connection is retried up to 5s of it)")
	f.IntVar(&prefetch, "prefetch", 4, "chunks read ahead of sequential reads")
	f.BoolVar(&daemon, "daemon", false, "detach once mounted")
	f.StringVar(&passwordFile, "password-file", "", "read the password from the first line of FILE")
	f.BoolVar(&sharedCache, "shared-cache", false, "coordinate chunk fetches with the other mounts sharing --cache-dir (each chunk fetched once)")
	f.StringVar(&node, "node", "", "this mount's name for --shared-cache (default HOSTNAME-PID)")
	f.BoolVar(&writeBack, "write-back", false, "return from close before the upload ends (fsync still waits for the server)")
	f.StringVar(&logFile, "log-file", "", "with --daemon, where the mount logs (default: per mount point under $XDG_STATE_HOME/netdisk)")
	f.StringVar(&pprofAddr, "pprof", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6061")
	_ = f.MarkHidden("pprof")
	return cmd
}

// mountPassword picks the password so that it need not show in ps: a
// mount runs for days, and its command line is readable by every user.
// In order: --password (with a warning), --password-file, then as every
// client command (clientFlags.credentials): NETDISK_PASSWORD, a prompt when
// stdin is a terminal, else no mount.
func mountPassword(cmd *cobra.Command, cf *clientFlags, file string) error {
	switch {
	case cmd.Flags().Changed("password"):
		if os.Getenv(envDaemonChild) == "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "warning: --password shows in ps to every user of this machine; use NETDISK_PASSWORD, --password-file or the prompt")
		}
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("--password-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		if cf.password = strings.TrimSuffix(line, "\r"); cf.password == "" {
			return fmt.Errorf("--password-file %s: the first line is empty", file)
		}
	}
	return cf.credentials(cmd, "")
}

// lockNode, when not empty, coordinates chunk fetches with the other mounts
// sharing cacheDir under that node name.
func runMount(ctx context.Context, cf clientFlags, dir, cacheDir string, cacheSize int64, ttl, timeout time.Duration, prefetch int, lockNode string, writeBack bool) (err error) {
	child := os.Getenv(envDaemonChild) != ""
	// One *os.File for fd 3: a second one would close the descriptor again
	// from its finalizer, by then perhaps a different file (the FUSE device).
	var ready *os.File
	if child {
		ready = os.NewFile(3, "ready")
		defer func() {
			if err != nil {
				fmt.Fprintln(ready, err)
			}
			ready.Close()
		}()
	}
	c := cf.client()
	be := mount.NewHTTPBackend(c)
	// A refused connection is most often a server restarting: a call
	// waits that long for it, then the mount counts the server lost and
	// stops waiting on every call (mount/link.go).
	be.RedialFor = min(timeout, redialGrace)
	if err := mount.Check(ctx, be); err != nil {
		return fmt.Errorf("cannot reach %s as %q: %w", c.Server, c.User, err)
	}
	// One cache for every mount of this user on this machine: chunks are
	// content-addressed, so sharing is safe.
	cache, err := mount.OpenChunkCache(filepath.Join(cacheDir, "chunks"), cacheSize)
	if err != nil {
		return err
	}
	stage, err := mount.OpenStaging(cacheDir)
	if err != nil {
		return err
	}
	defer stage.Close(slog.Default())
	// Files an earlier mount of this cache folder closed with --write-back
	// but never uploaded (it was killed) go to the server before we serve.
	if n, err := stage.Recover(ctx, be, slog.Default()); err != nil {
		slog.Error("recovering files queued by an earlier mount failed; they stay in the cache folder", "err", err, "uploaded", n)
	} else if n > 0 {
		slog.Info("uploaded files queued by an earlier mount", "files", n)
	}
	mo := mount.Options{Backend: be, Cache: cache, StageDir: stage.Dir, TTL: ttl,
		OpTimeout: timeout, Prefetch: prefetch, UID: uint32(os.Getuid()), GID: uint32(os.Getgid()), WriteBack: writeBack}
	if lockNode != "" {
		mo.ChunkLocks = &mount.HTTPChunkLocks{C: c, Node: lockNode, Log: slog.Default()}
	}
	fsys, err := mount.New(mo)
	if err != nil {
		return err
	}
	srv, err := mount.Mount(dir, fsys, "netdisk:"+c.User+"@"+strings.TrimPrefix(strings.TrimPrefix(c.Server, "http://"), "https://"))
	if err != nil {
		return err
	}
	slog.Info("mounted", "dir", dir, "server", c.Server, "user", c.User)
	if child {
		fmt.Fprintln(ready, "ok")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		slog.Info("unmounting", "signal", s.String())
		for i := 0; ; i++ {
			if err := srv.Unmount(); err == nil || i == 20 {
				if err != nil {
					slog.Error("unmount failed (busy?)", "err", err)
				}
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	srv.Wait()
	if writeBack {
		slog.Info("unmounted; uploading what write-back still holds")
	}
	fsys.Close()
	cache.Wait()
	return nil // stage.Close keeps staged data whose upload failed, and says where
}

// detach re-runs this command in a new session and returns once the child
// reports the mount ready (or its error). The child's output goes to
// logFile, or to the mount point's own log file (mountLogPath).
func detach(dir, password, logFile string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if logFile == "" {
		if logFile, err = mountLogPath(dir); err != nil {
			return err
		}
	}
	logf, err := openLog(logFile)
	if err != nil {
		return err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	// The password read here reaches the child in its environment, which
	// only its owner can read, never on its command line.
	cmd.Env = append(os.Environ(), envDaemonChild+"=1")
	if password != "" {
		cmd.Env = append(cmd.Env, "NETDISK_PASSWORD="+password)
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	buf := make([]byte, 4096)
	n, _ := r.Read(buf)
	msg := strings.TrimSpace(string(buf[:n]))
	if msg == "ok" {
		fmt.Printf("mounted %s (pid %d, log %s)\n", dir, cmd.Process.Pid, logFile)
		cmd.Process.Release()
		return nil
	}
	if msg == "" {
		msg = "the mount process exited before mounting; see " + logFile
	}
	return errors.New(msg)
}

// mountLogPath is the default log file of a detached mount of dir: one per
// mount point, so two mounts never interleave their lines and a user finds
// the log of the mount they look at, in the user's own state folder (never a
// shared, world-writable /tmp, where another user could plant the name).
func mountLogPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	state := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) { // the XDG rule: a relative value is ignored
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no folder for the mount's log (set --log-file): %w", err)
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "netdisk", "mount-"+escapeMountPoint(abs)+".log"), nil
}

// escapeMountPoint makes an absolute path one file name, as systemd-escape
// --path does: slashes become dashes, and every byte that is not a letter,
// digit, '_' or a non-leading '.' is written \xNN (so "/a-b" and "/a/b" stay
// apart). A name past what a file name may hold keeps its head and ends
// with a hash of the whole.
func escapeMountPoint(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return "-"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.' && i > 0 && p[i-1] != '/':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "\\x%02x", c)
		}
	}
	s := b.String()
	const max = 200 // leaves room for "mount-" and ".log" within NAME_MAX
	if len(s) > max {
		sum := sha256.Sum256([]byte(p))
		s = s[:max-17] + "-" + hex.EncodeToString(sum[:8])
	}
	return s
}

// openLog opens the log file for appending, creating it (and its folder)
// private to the user. O_NOFOLLOW refuses a symlink planted at the name, and
// a file that is not a regular file of this user is refused too: the log
// names paths of the user's drive.
func openLog(name string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); !st.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", name)
		} else if ok && int(sys.Uid) != os.Getuid() {
			err = fmt.Errorf("%s belongs to another user", name)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	return f, nil
}
