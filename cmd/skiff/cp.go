package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/skiffhq/skiff/api/client"
)

var cpHelp = cmdHelp{
	usage: "skiff cp SRC DST [-c CONTAINER] [-n NS]   (one of SRC, DST is POD:PATH)",
	about: `Copy a file or directory to or from a container.

The copy is a tar stream over exec, as with kubectl cp: the container
needs a tar (busybox's does). Copying from a container never writes
outside DST: entries with absolute paths or "..", and links, are skipped.`,
	examples: `  skiff cp ./config.yaml web-7d4b9c-x2k8p:/etc/app/config.yaml
  skiff cp web-7d4b9c-x2k8p:/var/log/app ./app-logs`,
}

func runCp(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("cp")
	var f clientFlags
	f.register(fs, true)
	container := fs.String("container", "", "container name")
	fs.StringVar(container, "c", "", "shorthand for --container")
	pos, err := parseArgs(env, fs, cpHelp, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{"expected SRC and DST\nSee 'skiff cp -h'."}
	}
	srcPod, srcPath, srcRemote := splitRemote(pos[0])
	dstPod, dstPath, dstRemote := splitRemote(pos[1])
	if srcRemote == dstRemote {
		return usageError{"exactly one of SRC and DST must be POD:PATH\nSee 'skiff cp -h'."}
	}
	c, _, err := f.client(env)
	if err != nil {
		return err
	}
	if dstRemote {
		return copyToPod(ctx, c, f.ns(), dstPod, *container, pos[0], dstPath)
	}
	return copyFromPod(ctx, c, f.ns(), srcPod, *container, srcPath, pos[1], env)
}

// splitRemote splits "pod:path"; a local path has no colon before its
// first slash.
func splitRemote(s string) (pod, p string, remote bool) {
	i := strings.Index(s, ":")
	if i <= 0 || strings.Contains(s[:i], "/") {
		return "", s, false
	}
	return s[:i], s[i+1:], true
}

// copyToPod tars src under the name path.Base(dst) and untars it in
// path.Dir(dst) in the container.
func copyToPod(ctx context.Context, c *client.Client, ns, pod, container, src, dst string) error {
	if dst == "" {
		return usageError{"the destination path in the pod is empty"}
	}
	if _, err := os.Stat(src); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, src, path.Base(dst))) }()
	var stderr strings.Builder
	err := c.Exec(ctx, ns, pod, client.ExecOptions{Container: container, Command: []string{"tar", "-xmf", "-", "-C", path.Dir(dst)}, Stdin: pr, Stderr: &stderr})
	pr.Close()
	if err != nil {
		return fmt.Errorf("copy to %s:%s: %w %s", pod, dst, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// writeTar writes src (a file or a directory tree) to w, named name.
func writeTar(w io.Writer, src, name string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil // sockets, devices, links: not copied
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = path.Join(name, filepath.ToSlash(rel))
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// copyFromPod tars src in the container and unpacks it as dst.
func copyFromPod(ctx context.Context, c *client.Client, ns, pod, container, src, dst string, env *cliEnv) error {
	src = path.Clean(src)
	if src == "" || src == "." || src == "/" {
		return usageError{fmt.Sprintf("refusing to copy %q from the pod: name a file or directory", src)}
	}
	pr, pw := io.Pipe()
	var stderr strings.Builder
	execErr := make(chan error, 1)
	go func() {
		err := c.Exec(ctx, ns, pod, client.ExecOptions{Container: container, Command: []string{"tar", "-cf", "-", "-C", path.Dir(src), path.Base(src)}, Stdout: pw, Stderr: &stderr})
		pw.CloseWithError(err)
		execErr <- err
	}()
	n, err := readTar(pr, path.Base(src), dst, env.stderr)
	pr.Close()
	if eerr := <-execErr; eerr != nil {
		return fmt.Errorf("copy from %s:%s: %w %s", pod, src, eerr, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return fmt.Errorf("copy from %s:%s: %w", pod, src, err)
	}
	if n == 0 {
		return fmt.Errorf("copy from %s:%s: nothing to copy", pod, src)
	}
	return nil
}

// errUnsafe is an archive entry that would land outside the destination.
var errUnsafe = errors.New("unsafe path in archive")

// readTar unpacks entries under base from r as dst, and returns how many
// it wrote. Entries that are not regular files or directories, or whose
// names would escape dst, are skipped with a warning.
func readTar(r io.Reader, base, dst string, warn io.Writer) (int, error) {
	tr := tar.NewReader(r)
	n := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		target, err := entryPath(hdr.Name, base, dst)
		if err != nil {
			fmt.Fprintf(warn, "warning: skipping %q: %v\n", hdr.Name, err)
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return n, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return n, err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, hdr.FileInfo().Mode().Perm())
			if err != nil {
				return n, err
			}
			_, cerr := io.Copy(f, tr)
			if err := errors.Join(cerr, f.Close()); err != nil {
				return n, err
			}
		default:
			fmt.Fprintf(warn, "warning: skipping %q: not a regular file or directory\n", hdr.Name)
			continue
		}
		n++
	}
}

// entryPath maps an archive name under base to a path under dst.
func entryPath(name, base, dst string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", errUnsafe
	}
	clean := path.Clean(name)
	rel, ok := strings.CutPrefix(clean, base)
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return "", errUnsafe
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", errUnsafe
		}
	}
	return filepath.Join(dst, filepath.FromSlash(rel)), nil
}
