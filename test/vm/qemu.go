package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kernelCmdline boots to the initramfs's /init with the console on the
// first serial port and no cgroup v1 controller at all; a panic powers
// the VM off at once (with -no-reboot).
const kernelCmdline = "console=ttyS0 quiet loglevel=4 sysctl.kernel.hung_task_timeout_secs=30 panic=-1 cgroup_no_v1=all rdinit=/init"

type bootConfig struct {
	qemu, kernel, initrd string
	memory, cpu          string
	cpus                 int
	token                string
	timeout              time.Duration
	// stall, when set, ends the boot with errGuestStalled once the
	// console has been silent this long (the guest prints a line every
	// 10 s while its suites run).
	stall   time.Duration
	verbose bool
	log     string // the whole console is written here
	// disk, when set, is a raw image the guest sees as /dev/vda. Its
	// cache is writeback: a guest flush reaches the image file, and what
	// the guest has not flushed is lost when the guest dies, as with a
	// power cut.
	disk string
}

// qemuArgs runs the VM under TCG (KVM hangs on the build hosts), with no
// devices but the serial console on stdio.
func qemuArgs(c bootConfig) []string {
	args := []string{
		"-accel", "tcg,thread=multi", "-cpu", c.cpu, "-m", c.memory, "-smp", strconv.Itoa(c.cpus),
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none", "-serial", "stdio",
		"-no-reboot", "-kernel", c.kernel, "-initrd", c.initrd, "-append", kernelCmdline,
	}
	if c.disk != "" {
		args = append(args, "-drive", "file="+c.disk+",format=raw,if=virtio,cache=writeback")
	}
	return args
}

// errGuestStalled is a guest that stopped printing: the whole machine,
// not one test, stopped (a hung test is ended by its -test.timeout,
// which prints its goroutines).
var errGuestStalled = errors.New("the guest stalled")

// boot runs the VM to the end and returns what its console reported. It
// fails when a suite failed, when the final marker never came, when the
// console went silent for c.stall, or when the VM ran past c.timeout
// (qemu is killed in the last two cases).
func boot(ctx context.Context, c bootConfig) (*result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ctx, stalled := context.WithCancelCause(ctx)
	defer stalled(nil)
	logFile, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, c.qemu, qemuArgs(c)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start qemu: %w", err)
	}
	var console io.Reader = out
	if c.stall > 0 {
		// Every read of the console puts the stall off again.
		t := time.AfterFunc(c.stall, func() { stalled(errGuestStalled) })
		defer t.Stop()
		console = stallReader{out, t, c.stall}
	}
	p := newParser(c.token, c.verbose, os.Stdout)
	scanErr := p.read(io.TeeReader(console, logFile))
	waitErr := cmd.Wait()
	p.res.wall = time.Since(start)
	switch {
	case errors.Is(context.Cause(ctx), errGuestStalled):
		return p.res, fmt.Errorf("%w: its console printed nothing for %s (its last heartbeat: %q; the suite running: %q); qemu killed (console log: %s)",
			errGuestStalled, c.stall, p.res.alive, p.cur, c.log)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return p.res, fmt.Errorf("the VM did not finish within %s; qemu killed (console log: %s)", c.timeout, c.log)
	case scanErr != nil:
		return p.res, fmt.Errorf("read the console: %w", scanErr)
	case !p.res.done:
		return p.res, fmt.Errorf("the VM stopped before reporting a result (qemu: %v)", waitErr)
	case p.res.rc != 0:
		return p.res, fmt.Errorf("suites failed in the VM: %s", strings.Join(p.res.failed(), ", "))
	}
	return p.res, nil
}

// stallReader resets its timer whenever its reader returns bytes.
type stallReader struct {
	r     io.Reader
	t     *time.Timer
	stall time.Duration
}

func (s stallReader) Read(b []byte) (int, error) {
	n, err := s.r.Read(b)
	if n > 0 {
		s.t.Reset(s.stall)
	}
	return n, err
}

// result is what the VM's console reported.
type result struct {
	info   string
	booted float64 // VM uptime (s) when the suites began
	suites []suiteResult
	errs   []string // SKIFF-VM-ERROR lines
	alive  string   // the last SKIFF-VM-ALIVE: uptime, then processes in D state
	acks   []string // console lines "ACK ...": writes a test acknowledged (the last may be cut off)
	done   bool
	rc     int
	uptime float64
	wall   time.Duration
}

type suiteResult struct {
	name       string
	rc         int
	start, end float64 // VM uptime (s)
}

func (r *result) failed() []string {
	var out []string
	for _, s := range r.suites {
		if s.rc != 0 {
			out = append(out, s.name)
		}
	}
	out = append(out, r.errs...)
	return out
}

func (r *result) print(w io.Writer) {
	if r.info != "" {
		fmt.Fprintf(w, "test-vm: %s\n", r.info)
	}
	fmt.Fprintf(w, "test-vm: booted in %.1fs (VM uptime)\n", r.booted)
	for _, s := range r.suites {
		v := "ok  "
		if s.rc != 0 {
			v = "FAIL"
		}
		fmt.Fprintf(w, "test-vm: %s %-28s %6.1fs (rc=%d)\n", v, s.name, s.end-s.start, s.rc)
	}
}

// parser reads the console line by line. Lines that carry the token are
// the harness's markers; the rest is kernel and test output, echoed when
// verbose and otherwise kept per suite for a failure report.
type parser struct {
	token   string
	verbose bool
	w       io.Writer
	res     *result
	cur     string   // the suite running
	buf     []string // its output
}

const keepLines = 300

func newParser(token string, verbose bool, w io.Writer) *parser {
	return &parser{token: token, verbose: verbose, w: w, res: &result{rc: -1}}
}

func (p *parser) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		p.line(strings.TrimRight(sc.Text(), "\r"))
	}
	return sc.Err()
}

func (p *parser) line(l string) {
	kind, rest, ok := p.marker(l)
	if !ok && strings.HasPrefix(l, "ACK ") {
		p.res.acks = append(p.res.acks, l)
	}
	if !ok {
		if p.verbose {
			fmt.Fprintln(p.w, l)
		} else if strings.HasPrefix(l, "--- FAIL") || strings.HasPrefix(l, "panic:") {
			fmt.Fprintf(p.w, "test-vm: [%s] %s\n", p.cur, l)
		}
		if p.cur != "" {
			p.buf = append(p.buf, l)
			if len(p.buf) > 2*keepLines {
				p.buf = append(p.buf[:0], p.buf[len(p.buf)-keepLines:]...)
			}
		}
		return
	}
	f := strings.Fields(rest)
	kv := map[string]string{}
	for _, x := range f {
		if k, v, ok := strings.Cut(x, "="); ok {
			kv[k] = v
		}
	}
	switch kind {
	case "INFO":
		p.res.info = rest
	case "ERROR":
		p.res.errs = append(p.res.errs, rest)
		fmt.Fprintf(p.w, "test-vm: error in the VM: %s\n", rest)
	case "BOOTED":
		if len(f) > 0 {
			p.res.booted, _ = strconv.ParseFloat(f[0], 64)
		}
		fmt.Fprintf(p.w, "test-vm: booted (%ss uptime), running the suites\n", strings.Join(f, " "))
	case "START":
		if len(f) > 0 {
			p.cur, p.buf = f[0], p.buf[:0]
			fmt.Fprintf(p.w, "test-vm: running %s\n", p.cur)
		}
	case "SUITE":
		if len(f) == 0 {
			return
		}
		s := suiteResult{name: f[0], rc: atoi(kv["rc"], -1)}
		s.start, _ = strconv.ParseFloat(kv["start"], 64)
		s.end, _ = strconv.ParseFloat(kv["end"], 64)
		p.res.suites = append(p.res.suites, s)
		if s.rc != 0 && !p.verbose {
			lines := p.buf
			if len(lines) > keepLines {
				lines = lines[len(lines)-keepLines:]
			}
			fmt.Fprintf(p.w, "test-vm: %s failed (rc=%d); its last %d lines:\n%s\n", s.name, s.rc, len(lines), strings.Join(lines, "\n"))
		}
		p.cur = ""
	case "ALIVE":
		p.res.alive = rest
		if len(f) > 1 && p.verbose {
			fmt.Fprintf(p.w, "test-vm: uninterruptible in the guest at %s s:%s\n", f[0], strings.TrimPrefix(rest, f[0]))
		}
	case "DONE":
		p.res.done = true
		p.res.rc = atoi(kv["rc"], -1)
		p.res.uptime, _ = strconv.ParseFloat(kv["uptime"], 64)
	}
}

// marker recognises "SKIFF-VM-<KIND> <token> <rest>" anywhere in a line
// (kernel messages may share the line).
func (p *parser) marker(l string) (kind, rest string, ok bool) {
	i := strings.Index(l, "SKIFF-VM-")
	if i < 0 {
		return "", "", false
	}
	f := strings.SplitN(l[i+len("SKIFF-VM-"):], " ", 3)
	if len(f) < 2 || f[1] != p.token {
		return "", "", false
	}
	if len(f) == 3 {
		rest = f[2]
	}
	return f[0], rest, true
}

func atoi(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
