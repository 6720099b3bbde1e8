package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The power-cut run (-powercut, in make test-vm): the store's
// acknowledged writes must survive the machine losing power, not only
// the process being killed (storage's TestCrashKill9). A VM with a disk
// runs storage's crash child, which writes from eight goroutines to a
// store on that disk and prints each write once acknowledged; after a
// random delay the guest reboots at once through sysrq (no sync, no
// unmount), and qemu exits. What the guest had not flushed to the disk
// is lost, as in a power cut: its page cache dies with it, while a
// flush it issued (fdatasync) has reached the image file. The VM then
// boots again from the same disk and storage's TestPowerCutVerify checks
// every acknowledged write. Each round continues on the disk of the
// last.

//go:embed powercut.sh
var powercutScript string

// powercutModules mount an ext4 file system on a virtio disk.
var powercutModules = []string{"crc32c_generic", "virtio_pci", "virtio_blk", "ext4"}

// ackLine is one whole acknowledgement of the crash child.
var ackLine = regexp.MustCompile(`^ACK (create r\d+-g\d+-\d+|counter counter-\d+ r\d+-g\d+-\d+)$`)

func runPowerCut(ctx context.Context, cfg config, qemu string) error {
	start := time.Now()
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		return fmt.Errorf("mkfs.ext4 is not installed (e2fsprogs): %w", err)
	}
	k, work, done, err := setUp(cfg, "skiff-vm-powercut-")
	if err != nil {
		return err
	}
	defer done()
	t := tree{}
	bcfg := cfg
	bcfg.suites = []string{"./storage"}
	if _, err := buildSuites(ctx, bcfg, work, t); err != nil {
		return err
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	if err := addBase(t, []string{"/bin/busybox"}, powercutScript, token); err != nil {
		return err
	}
	if err := addModules(t, k, powercutModules, nil); err != nil {
		return err
	}
	disk := filepath.Join(work, "disk.img")
	if err := os.WriteFile(disk, nil, 0o600); err != nil {
		return err
	}
	if err := os.Truncate(disk, 512<<20); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", disk).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %w\n%s", err, out)
	}
	bc := bootConfig{
		qemu: qemu, kernel: k.vmlinuz, memory: cfg.memory, cpu: cfg.cpu, cpus: cfg.cpus, disk: disk,
		token: token, timeout: cfg.timeout, stall: cfg.stall, verbose: cfg.verbose,
	}
	var acked []string
	for round := range cfg.powercuts {
		// The cut falls 1-5 s after the first commit: under TCG the
		// child writes a few hundred times a second by then.
		delay := 1 + 4*rand.Float64()
		phase := fmt.Sprintf("PHASE=cut ROUND=%d DELAY=%.1f\n", round, delay)
		res, err := bootPhase(ctx, bc, t, work, fmt.Sprintf("cut-%d", round), phase, "")
		if err != nil {
			return fmt.Errorf("round %d, writing: %w", round, err)
		}
		acks := wholeAcks(res.acks)
		if len(acks) == 0 {
			return fmt.Errorf("round %d: no write acknowledged before the power cut (-v prints the console)", round)
		}
		acked = append(acked, acks...)
		logf("round %d: power cut %.1f s after the first commit, %d writes acknowledged before it", round, delay, len(acks))
		res, err = bootPhase(ctx, bc, t, work, fmt.Sprintf("verify-%d", round), "PHASE=verify ROUND=0 DELAY=0\n", strings.Join(acked, "\n")+"\n")
		if res != nil {
			res.print(os.Stdout)
		}
		if err != nil {
			return fmt.Errorf("round %d, after the power cut: %w", round, err)
		}
	}
	logf("PASS: %d power cuts, %d acknowledged writes all found after them, in %s", cfg.powercuts, len(acked), time.Since(start).Round(time.Second))
	return nil
}

// bootPhase boots the VM once with the phase file (and the acknowledged
// writes, for verify) in its image. A failed boot keeps its console.
func bootPhase(ctx context.Context, bc bootConfig, t tree, work, name, phase, acked string) (*result, error) {
	t.file("/etc/skiff-vm/phase", 0o644, []byte(phase))
	t.file("/etc/skiff-vm/acked", 0o644, []byte(acked))
	bc.initrd = filepath.Join(work, name+".cpio")
	bc.log = filepath.Join(work, name+"-console.log")
	f, err := os.Create(bc.initrd)
	if err != nil {
		return nil, err
	}
	if err := writeCPIO(f, t); err != nil {
		f.Close()
		return nil, fmt.Errorf("write initramfs: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	res, err := boot(ctx, bc)
	if errors.Is(err, errGuestStalled) {
		return res, err
	}
	if err != nil {
		keepConsole(bc.log, "skiff-vm-powercut-"+name+"-console.log")
	}
	return res, err
}

// wholeAcks returns the acknowledgements that are whole lines, without
// the console's last one: the cut may have ended it midway, where a
// shorter name would still parse.
func wholeAcks(lines []string) []string {
	if len(lines) > 0 {
		lines = lines[:len(lines)-1]
	}
	var out []string
	for _, l := range lines {
		if ackLine.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}
