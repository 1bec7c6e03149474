package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"netdisk/apitype"
)

// push and pull as a sync tool: where a tree lands (the trailing-slash rule,
// decided by the command line alone so a re-run lands where the first run
// did), which files are unchanged (size and mtime, or content with
// Checksum), and what a mirror deletes.
//
// The rule is rsync's: a source directory named without a trailing slash
// is itself copied into the destination (push DIR /dest makes /dest/DIR),
// with one its contents are (push DIR/ /dest fills /dest). It never depends
// on whether the destination exists, which is what made a re-run of an
// interrupted push nest the tree beside the half-pushed one. A source file
// goes into a destination that ends in "/" or is a directory, else it is
// the destination's name (after a first run the name is a file, so a re-run
// agrees).

// SyncOptions choose what a push or pull plan skips and deletes.
type SyncOptions struct {
	// Checksum compares content (the file hash) instead of size and mtime:
	// slower (every candidate file is read) and immune to touched mtimes.
	Checksum bool
	// Delete makes the destination a mirror: what it holds under the
	// target that the source lacks is deleted.
	Delete bool
}

// contentsOf reports whether src names a directory's contents rather than
// the directory: a trailing separator, or "." / "/" (which have no name).
func contentsOf(src string, sep string) bool {
	if strings.HasSuffix(src, sep) {
		return true
	}
	b := path.Base(filepath.ToSlash(src))
	return b == "." || b == "/"
}

// PushPlan is what a push does: Files to send, Touch to fix only the
// attributes of (content equal), Skip unchanged, Dirs to create (empty
// directories), DirAttrs directories whose mtime or mode to set (parents
// first), Delete remote paths to remove (the topmost of each tree), Links
// symbolic links to create (as rsync -l: the link, never what it names).
type PushPlan struct {
	Root     string // the remote target of the local source
	Files    []PushFile
	Links    []PushLink
	Touch    []PushFile
	Skip     []PushFile
	Dirs     []string
	DirAttrs []PushFile
	Delete   []string
}

// PushLink is one symbolic link a push creates; Replace says the remote
// has a file or another link at its path, removed first.
type PushLink struct {
	Local, Remote, Target string
	ModTime               time.Time
	Replace               bool
}

// SkippedBytes sums the sizes of the unchanged files.
func (p PushPlan) SkippedBytes() int64 {
	var n int64
	for _, f := range append(slices.Clip(p.Skip), p.Touch...) {
		n += f.Size
	}
	return n
}

// pushTarget applies the trailing-slash rule to local (stat st) and remote
// ("" is "/").
func (c *Client) pushTarget(ctx context.Context, local string, st os.FileInfo, remote string) (string, error) {
	if remote == "" {
		remote = "/"
	}
	base := filepath.Base(filepath.Clean(local))
	if st.IsDir() {
		dest := path.Clean("/" + remote)
		if contentsOf(local, string(filepath.Separator)) {
			return dest, nil
		}
		return path.Join(dest, base), nil
	}
	dest := path.Clean("/" + remote)
	if strings.HasSuffix(remote, "/") {
		return path.Join(dest, base), nil
	}
	n, err := c.Stat(ctx, dest)
	switch {
	case err == nil && n.IsDir:
		return path.Join(dest, base), nil
	case err != nil && StatusOf(err) != http.StatusNotFound:
		return "", err
	}
	return dest, nil
}

// Tree returns every node under remote root by its path relative to root
// ("" for root itself): nothing when root does not exist.
func (c *Client) Tree(ctx context.Context, root string) (map[string]apitype.Node, error) {
	out := map[string]apitype.Node{}
	n, err := c.Stat(ctx, root)
	if StatusOf(err) == http.StatusNotFound {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out[""] = n
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		entries, err := c.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			r := path.Join(rel, e.Name)
			out[r] = e
			if e.IsDir {
				if err := walk(e.Path, r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if n.IsDir {
		err = walk(root, "")
	}
	return out, err
}

// PlanPush lists what a push of local (a file or a directory) to remote
// does, by the trailing-slash rule and o.
func (c *Client) PlanPush(ctx context.Context, local, remote string, o SyncOptions) (PushPlan, error) {
	st, err := os.Stat(local)
	if err != nil {
		return PushPlan{}, err
	}
	var p PushPlan
	if p.Root, err = c.pushTarget(ctx, local, st, remote); err != nil {
		return p, err
	}
	have, err := c.Tree(ctx, p.Root)
	if err != nil {
		return p, err
	}
	chunkSize, err := c.checksumChunkSize(ctx, o.Checksum)
	if err != nil {
		return p, err
	}
	seen := map[string]bool{"": true}
	// replace makes way for a local file where the remote has a directory,
	// or the other way round: a mirror deletes the remote one first.
	replace := func(rel string) {
		if o.Delete && rel != "" {
			p.Delete = append(p.Delete, path.Join(p.Root, rel))
		}
	}
	add := func(f PushFile, rel string) error {
		seen[rel] = true
		switch n, ok := have[rel]; {
		case ok && n.IsDir:
			replace(rel)
		case !ok || n.Size != f.Size || n.IsSymlink():
		case o.Checksum:
			h, err := localFileHash(f.Local, chunkSize)
			if err != nil {
				return err
			}
			if h == n.FileHash {
				p.attrs(f, n)
				return nil
			}
		case n.MTime.Time.Equal(f.ModTime):
			p.attrs(f, n)
			return nil
		}
		p.Files = append(p.Files, f)
		return nil
	}
	if !st.IsDir() {
		err = add(PushFile{Local: local, Remote: p.Root, Size: st.Size(), ModTime: st.ModTime(), Mode: perm(st)}, "")
		return p, err
	}
	err = filepath.WalkDir(local, func(lp string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(local, lp)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		r := path.Join(p.Root, rel)
		if d.IsDir() {
			seen[rel] = true
			if n, ok := have[rel]; ok && !n.IsDir {
				replace(rel)
				delete(have, rel)
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if n, ok := have[rel]; r != "/" && (!ok || !n.MTime.Time.Equal(info.ModTime()) || n.Mode != perm(info)) {
				p.DirAttrs = append(p.DirAttrs, PushFile{Local: lp, Remote: r, ModTime: info.ModTime(), Mode: perm(info)})
			}
			empty, err := isEmptyDir(lp)
			if err == nil && empty {
				if n, ok := have[rel]; !ok || !n.IsDir {
					p.Dirs = append(p.Dirs, r)
				}
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return p.link(lp, r, rel, have, seen, replace)
		}
		if !d.Type().IsRegular() {
			return nil // devices, fifos, sockets: the drive holds none
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return add(PushFile{Local: lp, Remote: r, Size: info.Size(), ModTime: info.ModTime(), Mode: perm(info)}, rel)
	})
	if err != nil || !o.Delete {
		return p, err
	}
	p.Delete = topmost(append(p.Delete, extra(have, seen, p.Root)...))
	return p, nil
}

// link plans the local symbolic link lp (remote path r, rel below the
// root): nothing when the remote has the same link, else a link to create,
// over a remote file or link (a folder there goes only with --delete, by
// replace, as for a file).
func (p *PushPlan) link(lp, r, rel string, have map[string]apitype.Node, seen map[string]bool, replace func(string)) error {
	seen[rel] = true
	target, err := os.Readlink(lp)
	if err != nil {
		return err
	}
	info, err := os.Lstat(lp)
	if err != nil {
		return err
	}
	l := PushLink{Local: lp, Remote: r, Target: target, ModTime: info.ModTime()}
	switch n, ok := have[rel]; {
	case ok && n.IsSymlink() && n.Target == target:
		return nil
	case ok && n.IsDir:
		replace(rel)
	case ok:
		l.Replace = true
	}
	p.Links = append(p.Links, l)
	return nil
}

// attrs files f, whose content the remote node n has, as skipped or, when
// its mtime or mode differ, to be touched.
func (p *PushPlan) attrs(f PushFile, n apitype.Node) {
	if n.MTime.Time.Equal(f.ModTime) && n.Mode == f.Mode {
		p.Skip = append(p.Skip, f)
		return
	}
	p.Touch = append(p.Touch, f)
}

// extra returns the paths (joined to root) of the entries of have not in
// seen, the topmost of each missing tree only, sorted.
func extra(have map[string]apitype.Node, seen map[string]bool, root string) []string {
	var out []string
	for rel := range have {
		if seen[rel] {
			continue
		}
		if parent := path.Dir(rel); parent != "." && !seen[parent] {
			continue // removed with its parent
		}
		out = append(out, path.Join(root, rel))
	}
	slices.Sort(out)
	return out
}

// topmost sorts paths and drops those under another one of them.
func topmost(paths []string) []string {
	in := map[string]bool{}
	for _, p := range paths {
		in[p] = true
	}
	var out []string
	for p := range in {
		under := false
		for c, d := p, path.Dir(p); d != c && d != "/" && d != "."; c, d = d, path.Dir(d) {
			if in[d] {
				under = true
				break
			}
		}
		if !under {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func perm(fi os.FileInfo) uint32 { return uint32(fi.Mode().Perm()) }

// localFileHash computes a local file's file hash (the server's content
// identity) with chunkSize.
func localFileHash(name string, chunkSize int64) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := newStreamHasher(chunkSize)
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return h.Sum(), nil
}

// SetAttrs stores f's mtime and mode on its remote file.
func (c *Client) SetAttrs(ctx context.Context, f PushFile) error {
	mode := f.Mode
	_, err := c.SetAttr(ctx, f.Remote, &f.ModTime, &mode)
	return err
}

// RemoveAll deletes each of paths (recursively), stopping at the first error.
func (c *Client) RemoveAll(ctx context.Context, paths []string) error {
	for _, p := range paths {
		if err := c.Remove(ctx, p, true); err != nil && StatusOf(err) != http.StatusNotFound {
			return fmt.Errorf("delete %s: %w", p, err)
		}
	}
	return nil
}

// PullFile is one file a pull fetches (or skips).
type PullFile struct {
	Remote, Local string
	Node          apitype.Node
}

// PullPlan is what a pull does, the mirror image of PushPlan: Delete holds
// local paths.
type PullPlan struct {
	Root   string // the local target of the remote source
	Files  []PullFile
	Touch  []PullFile
	Skip   []PullFile
	Dirs   []PullFile // every directory, created (and given its mode) if missing
	Links  []PullFile // symbolic links to create (Node.Target), as rsync -l does
	Delete []string
}

// SkippedBytes sums the sizes of the unchanged files.
func (p PullPlan) SkippedBytes() int64 {
	var n int64
	for _, f := range append(slices.Clip(p.Skip), p.Touch...) {
		n += f.Node.Size
	}
	return n
}

// PlanPull lists what a pull of remote (a file or a directory) to local
// does, by the trailing-slash rule and o.
func (c *Client) PlanPull(ctx context.Context, remote, local string, o SyncOptions) (PullPlan, error) {
	var p PullPlan
	src := path.Clean("/" + remote)
	root, err := c.Stat(ctx, src)
	if err != nil {
		return p, err
	}
	if local == "" {
		local = "."
	}
	switch {
	case root.IsDir && contentsOf(remote, "/"):
		p.Root = local
	case root.IsDir:
		p.Root = filepath.Join(local, path.Base(src))
	case strings.HasSuffix(local, string(filepath.Separator)) || isDir(local):
		p.Root = filepath.Join(local, path.Base(src))
	default:
		p.Root = local
	}
	tree := map[string]apitype.Node{"": root}
	if root.IsDir {
		if tree, err = c.Tree(ctx, src); err != nil {
			return p, err
		}
	}
	chunkSize, err := c.checksumChunkSize(ctx, o.Checksum)
	if err != nil {
		return p, err
	}
	rels := make([]string, 0, len(tree))
	for rel := range tree {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	for _, rel := range rels {
		n := tree[rel]
		f := PullFile{Remote: path.Join(src, rel), Local: filepath.Join(p.Root, filepath.FromSlash(rel)), Node: n}
		st, err := os.Lstat(f.Local)
		if err == nil && st.IsDir() != n.IsDir && o.Delete {
			// A file where the remote has a directory, or the other way
			// round: a mirror deletes the local one first.
			p.Delete = append(p.Delete, f.Local)
			err = fs.ErrNotExist
		}
		if n.IsDir {
			p.Dirs = append(p.Dirs, f)
			continue
		}
		if n.IsSymlink() {
			if err == nil && st.Mode()&fs.ModeSymlink != 0 {
				if t, err := os.Readlink(f.Local); err == nil && t == n.Target {
					continue // the same link
				}
			}
			p.Links = append(p.Links, f)
			continue
		}
		switch {
		case err != nil || !st.Mode().IsRegular() || st.Size() != n.Size:
		case o.Checksum:
			h, err := localFileHash(f.Local, chunkSize)
			if err != nil {
				return p, err
			}
			if h == n.FileHash {
				p.attrs(f, st)
				continue
			}
		case st.ModTime().Equal(n.MTime.Time):
			p.attrs(f, st)
			continue
		}
		p.Files = append(p.Files, f)
	}
	if !o.Delete || !root.IsDir {
		return p, nil
	}
	seen := map[string]bool{}
	for rel := range tree {
		seen[rel] = true
	}
	have := map[string]apitype.Node{}
	err = filepath.WalkDir(p.Root, func(lp string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p.Root, lp)
		if rel = filepath.ToSlash(rel); rel != "." && !strings.HasSuffix(rel, PartSuffix) && !strings.HasSuffix(rel, PartSuffix+".etag") {
			have[rel] = apitype.Node{IsDir: d.IsDir()}
		}
		return nil
	})
	for _, rel := range extra(have, seen, "") {
		p.Delete = append(p.Delete, filepath.Join(p.Root, filepath.FromSlash(rel)))
	}
	p.Delete = topmost(p.Delete)
	return p, err
}

func (p *PullPlan) attrs(f PullFile, st os.FileInfo) {
	if st.ModTime().Equal(f.Node.MTime.Time) && perm(st) == f.Node.Mode&0o777 {
		p.Skip = append(p.Skip, f)
		return
	}
	p.Touch = append(p.Touch, f)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// applyAttrs gives local file or directory name the node's mtime and mode.
func applyAttrs(name string, n apitype.Node) error {
	if err := os.Chmod(name, os.FileMode(n.Mode&0o777)); err != nil {
		return err
	}
	if n.MTime.Time.IsZero() {
		return nil
	}
	return os.Chtimes(name, time.Time{}, n.MTime.Time)
}

// checksumChunkSize is the server's chunk size when a plan compares content
// (the file hash is made of the chunks' MD5s, so a local file is hashed in
// the server's chunks), 0 when it does not need it.
func (c *Client) checksumChunkSize(ctx context.Context, checksum bool) (int64, error) {
	if !checksum {
		return 0, nil
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.ChunkSize, nil
}
