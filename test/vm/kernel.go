package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// kernelPackage is the Debian metapackage whose dependency is the kernel
// the VM boots (6.1 on bookworm).
const kernelPackage = "linux-image-amd64"

// kernel is an unpacked Debian kernel package.
type kernel struct {
	vmlinuz string // the bzImage
	modDir  string // its /lib/modules/<release>
	release string // "6.1.0-56-amd64"
}

// ensureKernel returns the kernel unpacked under cache/linux, fetching
// it first when it is not there: `apt-get download` of the metapackage
// names the versioned image package, which is downloaded and unpacked
// with `dpkg-deb -x`. An unpacked kernel is reused as it is, so later
// runs need neither apt nor the network.
func ensureKernel(cache string, logf func(string, ...any)) (kernel, error) {
	dir := filepath.Join(cache, "linux")
	if k, err := findKernel(dir); err == nil {
		return k, nil
	}
	dl := filepath.Join(cache, "download")
	if err := os.MkdirAll(dl, 0o755); err != nil {
		return kernel{}, err
	}
	logf("fetching %s with apt-get download into %s", kernelPackage, dl)
	meta, err := aptDownload(dl, kernelPackage)
	if err != nil {
		return kernel{}, err
	}
	out, err := exec.Command("dpkg-deb", "-f", meta, "Depends").Output()
	if err != nil {
		return kernel{}, fmt.Errorf("read the dependencies of %s: %w", meta, err)
	}
	image := imageDependency(string(out))
	if image == "" {
		return kernel{}, fmt.Errorf("%s depends on no linux-image package (%q)", kernelPackage, strings.TrimSpace(string(out)))
	}
	deb, err := aptDownload(dl, image)
	if err != nil {
		return kernel{}, err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return kernel{}, err
	}
	if out, err := exec.Command("dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return kernel{}, fmt.Errorf("dpkg-deb -x %s: %w: %s", deb, err, out)
	}
	k, err := findKernelImage(tmp)
	if err != nil {
		return kernel{}, err
	}
	logf("indexing the modules of %s", k.release)
	if err := depmod(k.modDir); err != nil {
		return kernel{}, fmt.Errorf("index the modules of %s: %w", k.release, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return kernel{}, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return kernel{}, err
	}
	// The unpacked tree is the cache; the 70 MB of packages are not.
	if err := os.RemoveAll(dl); err != nil {
		return kernel{}, err
	}
	return findKernel(dir)
}

// imageDependency picks the linux-image package out of a Depends field
// ("linux-image-6.1.0-56-amd64 (= 6.1.192-2)").
func imageDependency(depends string) string {
	for _, alt := range strings.FieldsFunc(depends, func(r rune) bool { return r == ',' || r == '|' }) {
		f := strings.Fields(alt)
		if len(f) > 0 && strings.HasPrefix(f[0], "linux-image-") {
			return f[0]
		}
	}
	return ""
}

// aptDownload downloads pkg's .deb into dir and returns its path; when
// apt knows no such package (a fresh box without package lists) it runs
// apt-get update once and tries again.
func aptDownload(dir, pkg string) (string, error) {
	run := func() ([]byte, error) {
		cmd := exec.Command("apt-get", "download", "-q", pkg)
		cmd.Dir = dir
		return cmd.CombinedOutput()
	}
	out, err := run()
	if err != nil {
		if upd, uerr := exec.Command("apt-get", "update", "-qq").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get download %s: %w: %s (and apt-get update: %v: %s)", pkg, err, out, uerr, upd)
		}
		if out, err = run(); err != nil {
			return "", fmt.Errorf("apt-get download %s: %w: %s", pkg, err, out)
		}
	}
	matches, err := filepath.Glob(filepath.Join(dir, pkg+"_*.deb"))
	if err != nil || len(matches) == 0 {
		return "", fmt.Errorf("apt-get download %s left no .deb in %s", pkg, dir)
	}
	sort.Strings(matches)
	return matches[len(matches)-1], nil
}

// findKernel finds the bzImage and the indexed module tree of an
// unpacked package.
func findKernel(dir string) (kernel, error) {
	k, err := findKernelImage(dir)
	if err != nil {
		return kernel{}, err
	}
	if _, err := os.Stat(filepath.Join(k.modDir, "modules.dep")); err != nil {
		return kernel{}, fmt.Errorf("kernel %s has no modules.dep: %w", k.release, err)
	}
	return k, nil
}

func findKernelImage(dir string) (kernel, error) {
	imgs, _ := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if len(imgs) != 1 {
		return kernel{}, fmt.Errorf("want one kernel in %s/boot, found %d", dir, len(imgs))
	}
	rel := strings.TrimPrefix(filepath.Base(imgs[0]), "vmlinuz-")
	return kernel{vmlinuz: imgs[0], modDir: filepath.Join(dir, "lib", "modules", rel), release: rel}, nil
}

// moduleDeps is a kernel's modules.dep: each module's file (relative to
// the module directory) and the files it depends on, by module name.
type moduleDeps struct {
	file map[string]string   // name -> "kernel/fs/overlayfs/overlay.ko"
	deps map[string][]string // file -> files it needs
}

// moduleName is the name of a module file: the base name without its
// .ko(.xz|.zst|.gz) suffix, with '-' read as '_' as modprobe does.
func moduleName(file string) string {
	b := path.Base(file)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

func parseModulesDep(r io.Reader) (moduleDeps, error) {
	md := moduleDeps{file: map[string]string{}, deps: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		mod, deps, ok := strings.Cut(line, ":")
		if !ok {
			return moduleDeps{}, fmt.Errorf("modules.dep: malformed line %q", line)
		}
		md.file[moduleName(mod)] = mod
		md.deps[mod] = strings.Fields(deps)
	}
	return md, sc.Err()
}

// closure returns the files of the named modules and of everything they
// depend on, each dependency before its users: the order to insmod them.
// Names in builtin (modules.builtin's names) need no file and are left
// out.
func (md moduleDeps) closure(names []string, builtin map[string]bool) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(file string)
	visit = func(file string) {
		if seen[file] {
			return
		}
		seen[file] = true
		for _, d := range md.deps[file] {
			visit(d)
		}
		order = append(order, file)
	}
	var missing []string
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		f, ok := md.file[n]
		switch {
		case ok:
			visit(f)
		case !builtin[n]:
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("kernel has no module %s", strings.Join(missing, ", "))
	}
	return order, nil
}

// readBuiltin reads modules.builtin's module names.
func readBuiltin(modDir string) (map[string]bool, error) {
	b, err := os.ReadFile(filepath.Join(modDir, "modules.builtin"))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, l := range strings.Fields(string(b)) {
		out[moduleName(l)] = true
	}
	return out, nil
}
