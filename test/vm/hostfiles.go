package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// addHost copies the host file p into t at the same path, mirroring every
// symlink on the way (on merged-/usr hosts /bin is a link to usr/bin), so
// the shared libraries a binary was linked against sit where its loader
// looks for them.
func addHost(t tree, p string) error {
	return addHostDepth(t, p, 0)
}

func addHostDepth(t tree, p string, depth int) error {
	if depth > 40 {
		return fmt.Errorf("%s: too many levels of symbolic links", p)
	}
	p = path.Clean(p)
	if !path.IsAbs(p) {
		return fmt.Errorf("%s is not an absolute path", p)
	}
	// Mirror the parents first: a parent that is a link on the host is a
	// link in the image, and p is then added under its target.
	parent := "/"
	for _, part := range strings.Split(strings.TrimPrefix(path.Dir(p), "/"), "/") {
		if part == "" {
			continue
		}
		cur := path.Join(parent, part)
		st, err := os.Lstat(cur)
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(cur)
			if err != nil {
				return err
			}
			if _, ok := t[cur]; !ok {
				t.symlink(cur, target)
			}
			return addHostDepth(t, path.Join(resolveLink(cur, target), strings.TrimPrefix(p, cur+"/")), depth+1)
		}
		if _, ok := t[cur]; !ok {
			t[cur] = &entry{mode: fs.ModeDir | 0o755}
		}
		parent = cur
	}
	st, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		t[p] = &entry{mode: fs.ModeSymlink | 0o777, link: target}
		return addHostDepth(t, resolveLink(p, target), depth+1)
	case st.Mode().IsRegular():
		t[p] = &entry{mode: st.Mode().Perm(), src: p}
		return nil
	}
	return fmt.Errorf("%s is neither a file nor a symbolic link", p)
}

// resolveLink is the absolute path a link at p with target points to.
func resolveLink(p, target string) string {
	if path.IsAbs(target) {
		return path.Clean(target)
	}
	return path.Join(path.Dir(p), target)
}

// addBinary adds the host executable found as name on PATH (or at that
// absolute path) with the shared libraries and loader it needs.
func addBinary(t tree, name string) error {
	p := name
	if !filepath.IsAbs(name) {
		var err error
		if p, err = exec.LookPath(name); err != nil {
			return fmt.Errorf("%s is not installed: %w", name, err)
		}
	}
	if err := addHost(t, p); err != nil {
		return err
	}
	libs, err := sharedLibs(p)
	if err != nil {
		return err
	}
	for _, l := range libs {
		if err := addHost(t, l); err != nil {
			return fmt.Errorf("library %s of %s: %w", l, p, err)
		}
	}
	return nil
}

// sharedLibs lists the libraries and loader a dynamic executable loads,
// as ldd reports them; a static one has none.
func sharedLibs(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if bytes.Contains(out, []byte("not a dynamic executable")) || bytes.Contains(out, []byte("statically linked")) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w: %s", bin, err, out)
	}
	return parseLDD(out)
}

// parseLDD reads ldd's output: "libc.so.6 => /lib/.../libc.so.6 (0x…)"
// and "/lib64/ld-linux-x86-64.so.2 (0x…)" lines; linux-vdso has no file.
func parseLDD(out []byte) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "linux-vdso") {
			continue
		}
		if strings.Contains(line, "=> not found") {
			return nil, fmt.Errorf("ldd: %s", line)
		}
		if _, after, ok := strings.Cut(line, "=> "); ok {
			line = after
		}
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "/") {
			continue
		}
		libs = append(libs, f[0])
	}
	return libs, sc.Err()
}
