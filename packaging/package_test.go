package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackagesAMD64 builds the amd64 .deb and .rpm with `make package`
// (as a user would), checks their metadata and contents, then installs,
// upgrades and purges the .deb on this machine.
func TestPackagesAMD64(t *testing.T) {
	requireTools(t, "make", "go", "git", "dpkg-deb", "dpkg", "rpm")
	root := repoRoot(t)
	version := strings.TrimSpace(run(t, root, nil, filepath.Join(root, "scripts", "pkg-version")))
	if !validVersion.MatchString(version) {
		t.Fatalf("scripts/pkg-version = %q; not valid for dpkg and rpm", version)
	}
	out := t.TempDir()
	run(t, root, nil, "make", "--no-print-directory", "package", "PKG_ARCHES=amd64", "PKG_DIR="+out)
	deb := filepath.Join(out, "skiff_"+version+"_amd64.deb")
	rpmFile := filepath.Join(out, "skiff-"+version+".x86_64.rpm")
	for _, f := range []string{deb, rpmFile} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("make package did not write %s: %v", f, err)
		}
	}
	t.Run("deb", func(t *testing.T) { checkDeb(t, deb, version) })
	t.Run("rpm", func(t *testing.T) { checkRPM(t, rpmFile, version) })
	t.Run("install", func(t *testing.T) { installDeb(t, deb) })
}

// wantFiles are the package's files and directories with their modes
// (the environment file differs: /etc/default for deb, /etc/sysconfig for
// rpm).
var wantFiles = map[string]string{
	"/usr/bin/skiff": "-rwxr-xr-x",
	"/usr/lib/systemd/system/skiff-server.service": "-rw-r--r--",
	"/usr/lib/systemd/system/skiff-agent.service":  "-rw-r--r--",
	"/etc/skiff/config.yaml":                       "-rw-r--r--",
	"/etc/skiff/config.yaml.d":                     "drwxr-xr-x",
	"/var/lib/skiff":                               "drwx------",
}

// sources maps packaged files to the repository files they must equal.
var sources = map[string]string{
	"/usr/lib/systemd/system/skiff-server.service": "systemd/skiff-server.service",
	"/usr/lib/systemd/system/skiff-agent.service":  "systemd/skiff-agent.service",
	"/etc/skiff/config.yaml":                       "config.yaml",
}

func checkDeb(t *testing.T, deb, version string) {
	fields := map[string]string{}
	for _, line := range strings.Split(run(t, "", nil, "dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends"), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			fields[k] = v
		}
	}
	wantFields := map[string]string{"Package": "skiff", "Version": version, "Architecture": "amd64", "Depends": "containerd, runc"}
	for k, want := range wantFields {
		if fields[k] != want {
			t.Errorf("deb %s = %q; want %q", k, fields[k], want)
		}
	}

	// dpkg-deb -c lists "perms owner/group size date time ./path".
	modes := map[string]string{}
	for _, line := range strings.Split(run(t, "", nil, "dpkg-deb", "-c", deb), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		if f[1] != "root/root" {
			t.Errorf("deb file %s owned by %s; want root/root", f[5], f[1])
		}
		modes[strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")] = f[0]
	}
	want := map[string]string{"/etc/default/skiff": "-rw-------"}
	for k, v := range wantFiles {
		want[k] = v
	}
	for path, mode := range want {
		if modes[path] != mode {
			t.Errorf("deb file %s mode %q; want %q", path, modes[path], mode)
		}
	}
	if _, ok := modes["/etc/sysconfig/skiff"]; ok {
		t.Errorf("deb holds /etc/sysconfig/skiff; want it only in the rpm")
	}

	ctrl := t.TempDir()
	run(t, "", nil, "dpkg-deb", "-e", deb, ctrl)
	conffiles := strings.Fields(readFile(t, filepath.Join(ctrl, "conffiles")))
	slices.Sort(conffiles)
	if want := []string{"/etc/default/skiff", "/etc/skiff/config.yaml"}; !slices.Equal(conffiles, want) {
		t.Errorf("deb conffiles = %q; want %q", conffiles, want)
	}
	for script, src := range map[string]string{"postinst": "scripts/postinstall.sh", "prerm": "scripts/preremove.sh", "postrm": "scripts/postremove.sh"} {
		if got, want := readFile(t, filepath.Join(ctrl, script)), readFile(t, src); got != want {
			t.Errorf("deb %s differs from %s", script, src)
		}
	}
	if _, err := os.Stat(filepath.Join(ctrl, "preinst")); err == nil {
		t.Errorf("deb has a preinst; want none")
	}

	tree := t.TempDir()
	run(t, "", nil, "dpkg-deb", "-x", deb, tree)
	src := map[string]string{"/etc/default/skiff": "skiff.env"}
	for k, v := range sources {
		src[k] = v
	}
	for path, from := range src {
		if got, want := readFile(t, filepath.Join(tree, path)), readFile(t, from); got != want {
			t.Errorf("deb %s differs from packaging/%s", path, from)
		}
	}
}

func checkRPM(t *testing.T, rpmFile, version string) {
	info := run(t, "", nil, "rpm", "-qp", "--qf", "%{NAME}|%{VERSION}|%{ARCH}|%{LICENSE}", rpmFile)
	if want := "skiff|" + version + "|x86_64|Apache-2.0"; info != want {
		t.Errorf("rpm name|version|arch|license = %q; want %q", info, want)
	}
	requires := strings.Fields(run(t, "", nil, "rpm", "-qpR", rpmFile))
	for _, dep := range []string{"containerd", "runc"} {
		if !slices.Contains(requires, dep) {
			t.Errorf("rpm requires %q; want %s among them", requires, dep)
		}
	}

	// One line per file: path|perms|flags (c = config, n = noreplace).
	type file struct{ mode, flags string }
	files := map[string]file{}
	for _, line := range strings.Split(run(t, "", nil, "rpm", "-qp", "--qf", "[%{FILENAMES}|%{FILEMODES:perms}|%{FILEFLAGS:fflags}|%{FILEUSERNAME}\n]", rpmFile), "\n") {
		p := strings.Split(line, "|")
		if len(p) != 4 {
			continue
		}
		if p[3] != "root" {
			t.Errorf("rpm file %s owned by %s; want root", p[0], p[3])
		}
		files[p[0]] = file{p[1], p[2]}
	}
	want := map[string]string{"/etc/sysconfig/skiff": "-rw-------"}
	for k, v := range wantFiles {
		want[k] = v
	}
	for path, mode := range want {
		if files[path].mode != mode {
			t.Errorf("rpm file %s mode %q; want %q", path, files[path].mode, mode)
		}
	}
	for _, conf := range []string{"/etc/skiff/config.yaml", "/etc/sysconfig/skiff"} {
		if fl := files[conf].flags; !strings.Contains(fl, "c") || !strings.Contains(fl, "n") {
			t.Errorf("rpm file %s flags %q; want config and noreplace (c, n)", conf, fl)
		}
	}
	if _, ok := files["/etc/default/skiff"]; ok {
		t.Errorf("rpm holds /etc/default/skiff; want it only in the deb")
	}

	scripts := run(t, "", nil, "rpm", "-qp", "--scripts", rpmFile)
	for phase, src := range map[string]string{"postinstall": "scripts/postinstall.sh", "preuninstall": "scripts/preremove.sh", "postuninstall": "scripts/postremove.sh"} {
		body := strings.TrimSpace(readFile(t, src))
		if !strings.Contains(scripts, phase+" scriptlet") || !strings.Contains(scripts, body) {
			t.Errorf("rpm has no %s scriptlet equal to %s", phase, src)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// installDeb installs the package on this machine, checks what it put
// there and that it started nothing, upgrades it over itself keeping a
// changed config file, and purges it twice: once keeping skiff's data,
// once (SKIFF_PURGE_DATA=yes) removing it.
func installDeb(t *testing.T, deb string) {
	if os.Geteuid() != 0 {
		t.Fatalf("installing the .deb needs root (make test runs as root on CI); uid is %d", os.Geteuid())
	}
	if err := exec.Command("dpkg-query", "-W", "skiff").Run(); err == nil {
		t.Fatalf("a skiff package is already installed on this machine; the test would replace and purge it — remove it first")
	}
	for _, p := range []string{"/var/lib/skiff", "/etc/skiff", "/usr/bin/skiff", "/etc/default/skiff"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists; the test installs and purges the skiff package and would touch it — move it away first", p)
		}
	}
	dpkg := func(env []string, args ...string) {
		t.Helper()
		run(t, "", append(env, "DEBIAN_FRONTEND=noninteractive"), "dpkg", args...)
	}
	t.Cleanup(func() {
		if exec.Command("dpkg-query", "-W", "skiff").Run() == nil {
			if out, err := exec.Command("dpkg", "--purge", "skiff").CombinedOutput(); err != nil {
				t.Errorf("cleanup: dpkg --purge skiff: %v\n%s", err, out)
			}
		}
		os.RemoveAll("/var/lib/skiff") // it did not exist before the test
	})

	dpkg(nil, "-i", deb)
	root := repoRoot(t)
	commit := strings.TrimSpace(run(t, root, nil, "git", "rev-parse", "--short=12", "HEAD"))
	if v := run(t, "", nil, "/usr/bin/skiff", "version"); !strings.HasPrefix(v, "skiff version ") || !strings.Contains(v, "commit: "+commit) {
		t.Errorf("skiff version = %q; want \"skiff version …\" with commit %s", v, commit)
	}
	for path, mode := range map[string]os.FileMode{
		"/etc/default/skiff":     0o600,
		"/etc/skiff/config.yaml": 0o644,
		"/var/lib/skiff":         0o700 | os.ModeDir,
		"/usr/bin/skiff":         0o755,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("after install: %v", err)
		} else if st.Mode() != mode {
			t.Errorf("after install: %s mode %v; want %v", path, st.Mode(), mode)
		}
	}
	checkNothingStarted(t)
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		// verify checks the units' syntax and that ExecStart exists.
		run(t, "", nil, "systemd-analyze", "verify", "/usr/lib/systemd/system/skiff-server.service", "/usr/lib/systemd/system/skiff-agent.service")
	}

	// Upgrade over itself: a changed config file is kept.
	local := "\nlog-level: debug # changed by the admin\n"
	appendTo(t, "/etc/skiff/config.yaml", local)
	dpkg(nil, "-i", deb)
	if got := readFile(t, "/etc/skiff/config.yaml"); !strings.HasSuffix(got, local) {
		t.Errorf("after upgrade /etc/skiff/config.yaml lost the admin's change")
	}
	checkNothingStarted(t)

	// Purge keeps data unless asked.
	marker := "/var/lib/skiff/server/state.db"
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	dpkg(nil, "--purge", "skiff")
	for _, gone := range []string{"/usr/bin/skiff", "/etc/skiff/config.yaml", "/etc/default/skiff", "/usr/lib/systemd/system/skiff-server.service"} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("after purge %s still exists", gone)
		}
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("purge removed skiff's data (%v); want it kept unless SKIFF_PURGE_DATA=yes", err)
	}
	dpkg(nil, "-i", deb)
	dpkg([]string{"SKIFF_PURGE_DATA=yes"}, "--purge", "skiff")
	if _, err := os.Stat("/var/lib/skiff"); err == nil {
		t.Errorf("purge with SKIFF_PURGE_DATA=yes left /var/lib/skiff")
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// checkNothingStarted fails when the package enabled a unit or started a
// skiff process.
func checkNothingStarted(t *testing.T) {
	t.Helper()
	links, _ := filepath.Glob("/etc/systemd/system/*.wants/skiff-*")
	if len(links) > 0 {
		t.Errorf("installing enabled units %q; want nothing enabled", links)
	}
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range exes {
		if target, err := os.Readlink(exe); err == nil && strings.HasPrefix(target, "/usr/bin/skiff") {
			cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(exe), "cmdline"))
			t.Errorf("installing started %s (%q); want nothing started", exe, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}
