package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCPIOExtractsWithBusybox writes an archive and unpacks it with
// busybox cpio, an implementation of the newc format besides ours.
func TestCPIOExtractsWithBusybox(t *testing.T) {
	src := filepath.Join(t.TempDir(), "host-file")
	if err := os.WriteFile(src, []byte("from the host\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := tree{}
	tr.file("/etc/a", 0o644, []byte("abc"))                // 3 bytes: needs padding
	tr.file("/etc/skiff-vm/empty", 0o600, nil)             // empty file
	tr.put("/usr/bin/prog", &entry{mode: 0o755, src: src}) // streamed from disk
	tr.symlink("/bin", "usr/bin")
	tr.put("/tmp", &entry{mode: os.ModeDir | os.ModeSticky | 0o777})
	var buf bytes.Buffer
	if err := writeCPIO(&buf, tr); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not a multiple of 4", buf.Len())
	}
	dir := t.TempDir()
	cmd := exec.Command("busybox", "cpio", "-i", "-d")
	cmd.Dir, cmd.Stdin = dir, &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("busybox cpio -i: %v: %s", err, out)
	}
	for p, want := range map[string]string{"etc/a": "abc", "etc/skiff-vm/empty": "", "usr/bin/prog": "from the host\n", "bin/prog": "from the host\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p, b, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "usr/bin/prog")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("usr/bin/prog mode = %v, %v; want 0755", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(dir, "tmp")); err != nil || st.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp mode = %v, %v; want sticky", st.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "bin")); err != nil || l != "usr/bin" {
		t.Errorf("bin -> %q, %v; want usr/bin", l, err)
	}
}

func TestParseLDD(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibseccomp.so.2 => /lib/x86_64-linux-gnu/libseccomp.so.2 (0x00007f)\n" +
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n"
	got, err := parseLDD([]byte(out))
	want := []string{"/lib/x86_64-linux-gnu/libseccomp.so.2", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("parseLDD = %q, %v; want %q", got, err, want)
	}
	if _, err := parseLDD([]byte("\tlibfoo.so.1 => not found\n")); err == nil {
		t.Error("parseLDD with a missing library = nil error; want one")
	}
}

func TestImageDependency(t *testing.T) {
	for in, want := range map[string]string{
		"linux-image-6.1.0-56-amd64 (= 6.1.192-2)":             "linux-image-6.1.0-56-amd64",
		"foo, linux-image-6.1.0-9-amd64 | linux-image-6.1.0-8": "linux-image-6.1.0-9-amd64",
		"initramfs-tools": "",
	} {
		if got := imageDependency(in); got != want {
			t.Errorf("imageDependency(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestModuleClosureOrdersDependenciesFirst(t *testing.T) {
	dep := "kernel/net/netfilter/nft_nat.ko: kernel/net/netfilter/nf_nat.ko kernel/net/netfilter/nf_tables.ko kernel/lib/libcrc32c.ko\n" +
		"kernel/net/netfilter/nf_nat.ko: kernel/net/netfilter/nf_conntrack.ko kernel/lib/libcrc32c.ko\n" +
		"kernel/net/netfilter/nf_conntrack.ko: kernel/lib/libcrc32c.ko\n" +
		"kernel/net/netfilter/nf_tables.ko: kernel/lib/libcrc32c.ko\n" +
		"kernel/lib/libcrc32c.ko:\n" +
		"kernel/fs/overlayfs/overlay.ko:\n"
	md, err := parseModulesDep(strings.NewReader(dep))
	if err != nil {
		t.Fatal(err)
	}
	got, err := md.closure([]string{"nft-nat", "overlay", "ext4"}, map[string]bool{"ext4": true})
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{}
	for i, f := range got {
		pos[moduleName(f)] = i
	}
	if len(got) != 6 {
		t.Fatalf("closure = %q; want the 6 modules once each", got)
	}
	for _, before := range [][2]string{{"libcrc32c", "nf_conntrack"}, {"nf_conntrack", "nf_nat"}, {"nf_nat", "nft_nat"}, {"nf_tables", "nft_nat"}} {
		if pos[before[0]] > pos[before[1]] {
			t.Errorf("closure = %q; want %s before %s", got, before[0], before[1])
		}
	}
	if _, err := md.closure([]string{"nosuch"}, nil); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("closure(nosuch) = %v; want an error naming it", err)
	}
}

// TestParserReadsOnlyTokenMarkers feeds a console transcript: markers
// with another token (as a test could print) are ordinary output.
func TestParserReadsOnlyTokenMarkers(t *testing.T) {
	console := strings.Join([]string{
		"[    0.000000] Linux version 6.1.0",
		"SKIFF-VM-BOOTED tok 5.20",
		"SKIFF-VM-START tok agent_cgroups",
		"--- FAIL: TestX (0.01s)",
		"SKIFF-VM-DONE other rc=0 uptime=1",
		"SKIFF-VM-SUITE tok agent_cgroups rc=1 start=5.2 end=9.7",
		"SKIFF-VM-START tok agent\r",
		"[   10.1] random: crng init done SKIFF-VM-SUITE tok agent rc=0 start=9.7 end=20.0",
		"SKIFF-VM-DONE tok rc=1 uptime=20.5",
	}, "\n")
	var out bytes.Buffer
	p := newParser("tok", false, &out)
	if err := p.read(strings.NewReader(console)); err != nil {
		t.Fatal(err)
	}
	r := p.res
	if !r.done || r.rc != 1 || r.booted != 5.2 || r.uptime != 20.5 {
		t.Errorf("result = %+v; want done, rc 1, booted 5.2, uptime 20.5", r)
	}
	if len(r.suites) != 2 || r.suites[0].rc != 1 || r.suites[1].rc != 0 || r.suites[1].end != 20 {
		t.Errorf("suites = %+v; want agent_cgroups failed, agent passed", r.suites)
	}
	if f := r.failed(); !slices.Equal(f, []string{"agent_cgroups"}) {
		t.Errorf("failed() = %q; want [agent_cgroups]", f)
	}
	if !strings.Contains(out.String(), "--- FAIL: TestX") {
		t.Errorf("output %q does not report the failing test", out.String())
	}
}

func TestParserWithoutDoneIsNotDone(t *testing.T) {
	p := newParser("tok", false, &bytes.Buffer{})
	if err := p.read(strings.NewReader("SKIFF-VM-BOOTED tok 4.0\nKernel panic - not syncing\n")); err != nil {
		t.Fatal(err)
	}
	if p.res.done || p.res.rc != -1 {
		t.Errorf("result = %+v; want not done", p.res)
	}
}

func TestParseSuite(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want suite
		err  bool
	}{
		{"./agent/cgroups", suite{name: "agent_cgroups", pkg: "./agent/cgroups"}, false},
		{" ./agent=^TestAgent(A|B)$", suite{name: "agent", pkg: "./agent", run: "^TestAgent(A|B)$"}, false},
		{"agent", suite{}, true},
		{"./../x", suite{}, true},
		{"./agent=a b", suite{}, true},
	} {
		got, err := parseSuite(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseSuite(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	for _, s := range defaultSuites {
		if _, err := parseSuite(s); err != nil {
			t.Errorf("default suite %q: %v", s, err)
		}
	}
}

// fakeQEMU writes a script that stands in for qemu: it ignores its
// arguments and runs body.
func fakeQEMU(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "qemu")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBootVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, body, wantErr string
		stall, timeout      time.Duration // timeout 0: 2 s
	}{
		{"pass", "echo SKIFF-VM-BOOTED tok 1.0; echo SKIFF-VM-SUITE tok a rc=0 start=1 end=2; echo SKIFF-VM-DONE tok rc=0 uptime=2", "", 0, 0},
		{"suite failed", "echo SKIFF-VM-SUITE tok a rc=1 start=1 end=2; echo SKIFF-VM-DONE tok rc=1 uptime=2", "suites failed in the VM: a", 0, 0},
		{"forged verdict", "echo SKIFF-VM-DONE other rc=0 uptime=2", "stopped before reporting", 0, 0},
		{"panic", "echo 'Kernel panic - not syncing'; exit 0", "stopped before reporting", 0, 0},
		{"hangs", "echo SKIFF-VM-BOOTED tok 1.0; exec sleep 60", "did not finish within", 0, 0},
		// A silent console for the stall ends the boot before the timeout
		// and names the last heartbeat, with the process it found stuck.
		{"stalls", "echo SKIFF-VM-BOOTED tok 1.0; echo SKIFF-VM-ALIVE tok 7.5 412sh@cgroup_rmdir; exec sleep 60", "printed nothing for 1s (its last heartbeat: \"7.5 412sh@cgroup_rmdir\"", time.Second, 20 * time.Second},
		// Heartbeats alone keep a long suite going past the stall.
		{"beats", "echo SKIFF-VM-BOOTED tok 1.0; for i in $(seq 40); do echo SKIFF-VM-ALIVE tok $i; sleep 0.1; done; echo SKIFF-VM-DONE tok rc=0 uptime=9", "", 2 * time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			timeout := cmp.Or(tc.timeout, 2*time.Second)
			res, err := boot(context.Background(), bootConfig{
				qemu: fakeQEMU(t, tc.body), token: "tok", timeout: timeout, stall: tc.stall,
				log: filepath.Join(t.TempDir(), "console.log"),
			})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("boot = %v; want error containing %q", err, tc.wantErr)
			}
			if stalled := errors.Is(err, errGuestStalled); stalled != (tc.name == "stalls") {
				t.Errorf("boot = %v; errors.Is(errGuestStalled) = %v", err, stalled)
			}
			if res == nil {
				t.Fatal("boot returned no result")
			}
			if d := time.Since(start); d > timeout+8*time.Second {
				t.Errorf("boot took %s; want the hung VM killed at the %s timeout", d, timeout)
			}
		})
	}
}

// TestPowerCutAcks: the power-cut run counts only whole acknowledgement
// lines, and never the console's last one, which the cut may have ended
// midway ("r0-g3-12" cut to "r0-g3-1" still parses).
func TestPowerCutAcks(t *testing.T) {
	console := strings.Join([]string{
		"ACK create r0-g1-0\r",
		"[    3.1] EXT4-fs (vda): mounted ACK create r0-g2-0",
		"ACK counter counter-1 r0-g1-0",
		"ACK create r0-g1-",
		"ACK create r0-g3-1",
	}, "\n")
	p := newParser("tok", false, &bytes.Buffer{})
	if err := p.read(strings.NewReader(console)); err != nil {
		t.Fatal(err)
	}
	got := wholeAcks(p.res.acks)
	want := []string{"ACK create r0-g1-0", "ACK counter counter-1 r0-g1-0"}
	if !slices.Equal(got, want) {
		t.Errorf("wholeAcks = %q; want %q", got, want)
	}
	if args := strings.Join(qemuArgs(bootConfig{disk: "/tmp/d.img"}), " "); !strings.Contains(args, "-drive file=/tmp/d.img,format=raw,if=virtio,cache=writeback") {
		t.Errorf("qemu arguments %q: want the disk with a writeback cache", args)
	}
}
