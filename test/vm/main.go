package main

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

//go:embed init.sh
var initScript string

//go:embed stage2.sh
var stage2Script string

//go:embed prelude.sh
var preludeScript string

// defaultSuites are the packages run in the VM, each with the -test.run
// pattern that picks what differs on cgroup v2 (package=pattern; no
// pattern runs the whole package). Together: pod start; limits in
// memory.max, cpu.max, cpu.weight and pids.max; the QoS tree under the
// cgroup root; OOMKilled; the memory notifier woken by memory.events and
// PSI; eviction; a restarted runtime adopting its containers; the pod
// network (bridge, VXLAN, nftables, hostPort). Suites that do not touch cgroups
// (images, exec, probes, crash-loop timing) run on the host only: under
// TCG each costs tens of seconds of the 8-minute budget.
var defaultSuites = []string{
	"./agent/cgroups",
	"./agent/runtime/containerd=^TestIntegration(CgroupLimits|OOMKilled|AgentRestart)$",
	"./agent/eviction=^TestIntegrationMemory",
	"./agent/network=RealNetns$",
	"./agent=^TestAgentRunsPods$",
	"./cmd/skiff/internal/preflight=^TestGatherRealMachine$",
}

// hostBinaries are the host's programs the suites run, copied with their
// shared libraries.
var hostBinaries = []string{
	"/bin/busybox", "containerd", "containerd-shim-runc-v2", "runc",
	"ip", "bridge", "nft", "curl",
}

// bootModules are loaded at boot; autoModules (by name prefix) are only
// put in the image, where the kernel's request_module finds them through
// busybox modprobe (nf_tables loads its expressions on demand).
var (
	bootModules = []string{
		"crc32c_generic", // libcrc32c (nf_tables) asks the crypto API for crc32c at load
		"overlay", "veth", "bridge", "vxlan", "nf_tables", "nf_conntrack", "nf_nat",
		"nft_chain_nat", "nft_nat", "nft_masq", "nft_ct", "nft_fib_inet", "nft_fib_ipv4",
	}
	autoModulePrefixes = []string{"nft_", "nf_"}
)

type config struct {
	repo     string
	cache    string
	suites   []string
	run      string
	timeout  time.Duration
	stall    time.Duration
	suiteMax time.Duration
	scale    int
	memory   string
	cpu      string
	cpus     int
	verbose  bool
	keep     bool
	// powercuts, when set, makes this a power-cut run of that many
	// rounds (powercut.go) instead of the suites.
	powercuts int
}

func main() {
	var cfg config
	cacheDir, err := os.UserCacheDir()
	if err != nil {
		cacheDir = os.TempDir()
	}
	flag.StringVar(&cfg.cache, "cache", filepath.Join(cacheDir, "skiff-vm"), "directory for the downloaded kernel (outside the tree, reused)")
	suites := flag.String("suites", strings.Join(defaultSuites, ","), "comma-separated packages to run in the VM, each optionally =pattern (its -test.run)")
	flag.StringVar(&cfg.run, "run", "", "passed to every suite as -test.run, instead of the suites' own patterns")
	flag.DurationVar(&cfg.timeout, "timeout", 12*time.Minute, "the VM is killed and the run fails after this long")
	flag.DurationVar(&cfg.stall, "stall", 2*time.Minute, "a guest whose console is silent this long has stalled: qemu is killed and the VM booted once more")
	flag.IntVar(&cfg.scale, "scale", 4, "multiplies the tests' real-time bounds in the VM (SKIFF_TEST_TIMEOUT_SCALE, 2-20)")
	flag.DurationVar(&cfg.suiteMax, "suite-timeout", 8*time.Minute, "each suite's -test.timeout")
	flag.StringVar(&cfg.memory, "memory", "3G", "VM memory")
	flag.IntVar(&cfg.cpus, "smp", 2, "VM CPUs")
	flag.StringVar(&cfg.cpu, "cpu", "max", "qemu's CPU model")
	flag.BoolVar(&cfg.verbose, "v", false, "print the whole console, not only results and failures")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the work directory (initramfs, console log)")
	flag.IntVar(&cfg.powercuts, "powercut", 0, "instead of the suites, cut the power this many times under a store writing to a disk, checking its acknowledged writes after each")
	flag.Parse()
	cfg.suites = strings.Split(*suites, ",")
	wd, err := os.Getwd()
	if err != nil {
		fatal(err)
	}
	cfg.repo = wd
	if err := run(context.Background(), cfg); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "test-vm:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Printf("test-vm: "+format+"\n", args...)
}

func run(ctx context.Context, cfg config) error {
	if _, err := os.Stat(filepath.Join(cfg.repo, "go.mod")); err != nil {
		return errors.New("run from the repository root (go run ./test/vm)")
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return fmt.Errorf("qemu-system-x86_64 is not installed (make deps installs qemu-system-x86): %w", err)
	}
	if cfg.powercuts > 0 {
		return runPowerCut(ctx, cfg, qemu)
	}
	start := time.Now()
	k, work, done, err := setUp(cfg, "skiff-vm-")
	if err != nil {
		return err
	}
	defer done()
	t := tree{}
	suites, err := buildSuites(ctx, cfg, work, t)
	if err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	if err := addSystem(t, k, token, suites, cfg); err != nil {
		return err
	}
	initrd := filepath.Join(work, "initramfs.cpio")
	f, err := os.Create(initrd)
	if err != nil {
		return err
	}
	if err := writeCPIO(f, t); err != nil {
		f.Close()
		return fmt.Errorf("write initramfs: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	st, _ := os.Stat(initrd)
	logf("kernel %s, initramfs %d MiB, built in %s", k.release, st.Size()>>20, time.Since(start).Round(time.Second))
	bc := bootConfig{
		qemu: qemu, kernel: k.vmlinuz, initrd: initrd, memory: cfg.memory, cpu: cfg.cpu, cpus: cfg.cpus,
		token: token, timeout: cfg.timeout, stall: cfg.stall, verbose: cfg.verbose, log: filepath.Join(work, "console.log"),
	}
	res, err := boot(ctx, bc)
	if errors.Is(err, errGuestStalled) {
		// Under TCG the whole guest once stopped: no console line for
		// eight minutes, not even the -test.timeout report of the suite
		// running, one that passes in a second. A hang of the guest is
		// the emulator's, not a test's: boot once more, and say so. A
		// second stall fails the run.
		logf("%v", err)
		keepConsole(filepath.Join(work, "console.log"), "skiff-vm-stalled-console.log")
		logf("booting the VM once more")
		bc.log = filepath.Join(work, "console-2.log")
		res, err = boot(ctx, bc)
	}
	if res != nil {
		res.print(os.Stdout)
	}
	if err != nil {
		if !cfg.keep {
			keepConsole(bc.log, "skiff-vm-console.log")
		}
		return err
	}
	logf("PASS: %d suites on cgroup v2 in %s (VM %s)", len(suites), time.Since(start).Round(time.Second), res.wall.Round(time.Second))
	return nil
}

// setUp fetches the kernel and makes the work directory (named from
// prefix), which done removes unless -keep.
func setUp(cfg config, prefix string) (k kernel, work string, done func(), err error) {
	if k, err = ensureKernel(cfg.cache, logf); err != nil {
		return kernel{}, "", nil, fmt.Errorf("kernel: %w", err)
	}
	if work, err = os.MkdirTemp("", prefix); err != nil {
		return kernel{}, "", nil, err
	}
	if cfg.keep {
		logf("work directory %s", work)
		return k, work, func() {}, nil
	}
	return k, work, func() { os.RemoveAll(work) }, nil
}

// keepConsole copies a failed boot's console log out of the work
// directory, which is removed, for the reader.
func keepConsole(log, name string) {
	keep := filepath.Join(os.TempDir(), name)
	if b, err := os.ReadFile(log); err == nil && os.WriteFile(keep, b, 0o644) == nil {
		logf("console log kept at %s", keep)
	}
}

// suite is one test binary in the image.
type suite struct {
	name string // "agent_runtime_containerd"
	pkg  string // "./agent/runtime/containerd"
	run  string // its -test.run; "" runs every test
}

// parseSuite reads "./pkg" or "./pkg=pattern".
func parseSuite(s string) (suite, error) {
	pkg, run, _ := strings.Cut(strings.TrimSpace(s), "=")
	if !strings.HasPrefix(pkg, "./") || strings.Contains(pkg, "..") {
		return suite{}, fmt.Errorf("suite %q: want ./package[=pattern] inside the module", s)
	}
	if strings.ContainsAny(run, " \t\n") {
		return suite{}, fmt.Errorf("suite %q: the pattern must not contain white space", s)
	}
	name := strings.ReplaceAll(strings.Trim(strings.TrimPrefix(pkg, "./"), "/"), "/", "_")
	if name == "" {
		name = "root"
	}
	return suite{name: name, pkg: pkg, run: run}, nil
}

// buildSuites compiles each package's tests (static, no race detector:
// TSan under TCG is far too slow) into the image under /skiff/bin, with
// the package's testdata under /skiff/src/<name>, the suites' working
// directory.
func buildSuites(ctx context.Context, cfg config, work string, t tree) ([]suite, error) {
	var out []suite
	for _, spec := range cfg.suites {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		s, err := parseSuite(spec)
		if err != nil {
			return nil, err
		}
		name, pkg := s.name, s.pkg
		bin := filepath.Join(work, name+".test")
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
		cmd.Dir = cfg.repo
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go test -c %s: %w\n%s", pkg, err, out)
		}
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%s has no tests", pkg)
		}
		t.put("/skiff/bin/"+name+".test", &entry{mode: 0o755, src: bin})
		t.dir("/skiff/src/" + name)
		if err := addTree(t, filepath.Join(cfg.repo, pkg, "testdata"), "/skiff/src/"+name+"/testdata"); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("no suites to run")
	}
	return out, nil
}

// addTree adds the regular files and directories under the host
// directory src at dst; a missing src adds nothing.
func addTree(t tree, src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.ToSlash(filepath.Join(dst, rel))
		switch {
		case d.IsDir():
			t.dir(target)
		case d.Type().IsRegular():
			t.put(target, &entry{mode: 0o644, src: p})
		}
		return nil
	})
}

// addSystem adds everything besides the suites: the init stages,
// busybox and the host's programs, the kernel modules, /etc.
func addSystem(t tree, k kernel, token string, suites []suite, cfg config) error {
	stage2 := strings.ReplaceAll(stage2Script, "@SCALE@", strconv.Itoa(cfg.scale))
	if err := addBase(t, hostBinaries, stage2, token); err != nil {
		return err
	}
	var lines []string
	for _, s := range suites {
		args := "-test.count=1 -test.v -test.timeout=" + cfg.suiteMax.String()
		switch {
		case cfg.run != "":
			args += " -test.run=" + cfg.run
		case s.run != "":
			args += " -test.run=" + s.run
		}
		lines = append(lines, s.name+" "+args)
	}
	t.file("/etc/skiff-vm/suites", 0o644, []byte(strings.Join(lines, "\n")+"\n"))
	return addModules(t, k, bootModules, autoModulePrefixes)
}

// addBase adds what every image has: the init stages (stage2 is the
// second's script; it and the prelude it sources mark their lines with
// token, for @TOKEN@), busybox and binaries with their libraries, /etc.
func addBase(t tree, binaries []string, stage2, token string) error {
	// Merged-/usr hosts link /bin, /sbin and /lib into /usr: so does the
	// image, else busybox's applet links under /sbin have nowhere to go.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64"} {
		if target, err := os.Readlink(d); err == nil {
			t.symlink(d, target)
			t.dir(resolveLink(d, target))
		}
	}
	for _, b := range binaries {
		if err := addBinary(t, b); err != nil {
			return err
		}
	}
	// /init runs before busybox installs its applets.
	t.file("/init", 0o755, []byte(initScript))
	if _, ok := t["/bin"]; !ok {
		t.dir("/bin")
	}
	t.put("/dev/console", &entry{mode: os.ModeDevice | os.ModeCharDevice | 0o600, dev: [2]uint32{5, 1}})
	t.file("/etc/skiff-vm/stage2", 0o755, []byte(strings.ReplaceAll(stage2, "@TOKEN@", token)))
	t.file("/etc/skiff-vm/prelude", 0o644, []byte(strings.ReplaceAll(preludeScript, "@TOKEN@", token)))
	t.file("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"))
	t.file("/etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n"))
	t.file("/etc/resolv.conf", 0o644, []byte("# skiff-vm: no DNS servers\n"))
	for _, d := range []string{"/proc", "/sys", "/dev", "/tmp", "/run", "/root", "/var/lib"} {
		t.dir(d)
	}
	return nil
}

// addModules puts the boot modules (listed in load order in
// /etc/skiff-vm/modules) and the autoload set (by name prefix) in the
// image, with the module index files busybox modprobe reads.
func addModules(t tree, k kernel, bootModules, autoModulePrefixes []string) error {
	f, err := os.Open(filepath.Join(k.modDir, "modules.dep"))
	if err != nil {
		return err
	}
	md, err := parseModulesDep(f)
	f.Close()
	if err != nil {
		return err
	}
	builtin, err := readBuiltin(k.modDir)
	if err != nil {
		return err
	}
	boot, err := md.closure(bootModules, builtin)
	if err != nil {
		return err
	}
	var auto []string
	for name := range md.file {
		for _, p := range autoModulePrefixes {
			if strings.HasPrefix(name, p) {
				auto = append(auto, name)
			}
		}
	}
	all, err := md.closure(append(append([]string{}, bootModules...), auto...), builtin)
	if err != nil {
		return err
	}
	dst := "/lib/modules/" + k.release
	if rl, ok := t["/lib"]; ok && rl.link != "" {
		dst = "/usr/lib/modules/" + k.release
	}
	for _, m := range all {
		t.put(dst+"/"+m, &entry{mode: 0o644, src: filepath.Join(k.modDir, m)})
	}
	for _, idx := range []string{"modules.dep", "modules.alias", "modules.symbols", "modules.builtin", "modules.order"} {
		if _, err := os.Stat(filepath.Join(k.modDir, idx)); err == nil {
			t.put(dst+"/"+idx, &entry{mode: 0o644, src: filepath.Join(k.modDir, idx)})
		}
	}
	t.file("/etc/skiff-vm/modules", 0o644, []byte(strings.Join(boot, "\n")+"\n"))
	return nil
}

func newToken() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
