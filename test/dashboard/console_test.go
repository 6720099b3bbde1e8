package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/node"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/streaming"
	"github.com/skiffhq/skiff/internal/tunnel"
	"github.com/skiffhq/skiff/server"
)

// startStandInAgent joins as nodeName and opens the node's tunnel with
// the agent's own handler, whose exec runs the command as a process on
// this machine in a pseudo-terminal (in a temporary directory). It
// stands in for a full agent with containerd, which test/remote runs:
// here only the page is under test.
func startStandInAgent(t *testing.T, info server.Info, nodeName, pod string) {
	t.Helper()
	tok, err := os.ReadFile(info.JoinTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cred, err := node.Join(ctx, node.JoinConfig{Server: info.URL, Token: strings.TrimSpace(string(tok)), NodeName: nodeName, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := tunnel.Dial(ctx, tunnel.DialConfig{Server: cred.Server, CAData: cred.CAData, Token: cred.Credential})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	h := &streaming.Handler{Logs: http.NotFoundHandler(), Targets: oneTarget(pod), Exec: &ptyExec{dir: t.TempDir()}}
	go (&http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}).Serve(sess)
}

// oneTarget knows one pod, default/<name>, with any container running.
type oneTarget string

func (o oneTarget) Target(ns, pod, container string) (kubelet.Target, error) {
	if ns != "default" || pod != string(o) {
		return kubelet.Target{}, fmt.Errorf("pod %s/%s: %w", ns, pod, kubelet.ErrNotFound)
	}
	return kubelet.Target{PodUID: "stand-in", ContainerID: "stand-in-" + container}, nil
}

// ptyExec runs commands on this machine in a pseudo-terminal.
type ptyExec struct{ dir string }

func (p *ptyExec) ExecStream(ctx context.Context, _ string, o runtime.ExecOptions) (int, error) {
	master, slave, err := openPTY()
	if err != nil {
		return -1, err
	}
	defer master.Close()
	cmd := exec.CommandContext(ctx, o.Cmd[0], o.Cmd[1:]...)
	cmd.Dir, cmd.Env = p.dir, []string{"PATH=/usr/bin:/bin", "HOME=" + p.dir, "TERM=xterm", "PS1=$ "}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		return -1, err
	}
	slave.Close()
	if o.Stdin != nil {
		go io.Copy(master, o.Stdin)
	}
	// Sizes are set through the file's RawConn, which holds it open for
	// the call: Fd() beside the Close below is a data race (the race
	// detector caught one when a resize came as the shell exited).
	rc, err := master.SyscallConn()
	if err != nil {
		return -1, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case sz := <-o.Resize:
				rc.Control(func(fd uintptr) { //nolint:errcheck // a closed file has no size to set
					_ = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: sz.Height, Col: sz.Width})
				})
			}
		}
	}()
	go io.Copy(o.Stdout, master)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), nil
	}
	return 0, err
}

func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	unlock := 0
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, master.Fd(), unix.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		master.Close()
		return nil, nil, e
	}
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// typeInto focuses sel and types line, then Enter, as a keyboard does:
// the text arrives as one input event (CDP's insertText; a keyDown per
// character would also fire keypress, which a terminal would count twice) and the
// Enter as a key press.
func (p *page) typeInto(sel, line string) {
	p.t.Helper()
	p.do("type "+line, chromedp.Focus(chromedp.CSS(sel), chromedp.NodeReady),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: line})
			return err
		}),
		chromedp.KeyEvent("\r"))
}
