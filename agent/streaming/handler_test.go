package streaming

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/agent/kubelet"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/tunnel"
)

// fakeTargets knows one pod, "default/p", with a running container "c"
// and a stopped one "gone".
type fakeTargets struct{}

func (fakeTargets) Target(ns, pod, container string) (kubelet.Target, error) {
	switch {
	case ns != "default" || pod != "p":
		return kubelet.Target{}, fmt.Errorf("pod %s/%s: %w", ns, pod, kubelet.ErrNotFound)
	case container == "gone":
		return kubelet.Target{}, fmt.Errorf("container gone: %w", kubelet.ErrNotRunning)
	}
	return kubelet.Target{PodUID: "u", ContainerID: "u-" + container + "-0", NetNSPath: "/ns/u"}, nil
}

// fakeExec upper-cases stdin to stdout, says "err" on stderr, records
// resizes and exits with the number given as the command's last word.
type fakeExec struct {
	mu      sync.Mutex
	got     runtime.ExecOptions
	id      string
	resizes []runtime.TermSize
}

func (f *fakeExec) ExecStream(ctx context.Context, id string, o runtime.ExecOptions) (int, error) {
	f.mu.Lock()
	f.got, f.id = o, id
	f.mu.Unlock()
	if o.Cmd[0] == "fail" {
		return -1, errors.New("runtime broke")
	}
	if o.Stderr != nil {
		io.WriteString(o.Stderr, "err")
	}
	if o.Stdin != nil {
		b, _ := io.ReadAll(o.Stdin)
		o.Stdout.Write([]byte(strings.ToUpper(string(b))))
	}
	if o.Resize != nil {
		sz := <-o.Resize
		f.mu.Lock()
		f.resizes = append(f.resizes, sz)
		f.mu.Unlock()
	}
	var code int
	fmt.Sscan(o.Cmd[len(o.Cmd)-1], &code)
	return code, nil
}

func startHandler(t *testing.T, h *Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// frames reads frames until the stream ends and returns them by channel.
func frames(t *testing.T, r io.Reader) map[byte]string {
	t.Helper()
	out := map[byte]string{}
	br := bufio.NewReader(r)
	var buf []byte
	for {
		ch, p, nb, err := tunnel.ReadFrame(br, buf)
		buf = nb
		if err != nil {
			return out
		}
		out[ch] += string(p)
	}
}

func TestExecSession(t *testing.T) {
	ex := &fakeExec{}
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: ex})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	req := tunnel.ExecRequest{Command: []string{"sh", "3"}, Stdin: true, Stdout: true, Stderr: true}
	s, err := tunnel.OpenStream(context.Background(), rt, addr, tunnel.ExecPrefix+"default/p/c?"+req.Query())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tunnel.WriteFrame(s, tunnel.ChanStdin, []byte("hello "))
	tunnel.WriteFrame(s, tunnel.ChanStdin, []byte("box"))
	tunnel.WriteFrame(s, tunnel.ChanClose, []byte{tunnel.ChanStdin})
	got := frames(t, s)
	if got[tunnel.ChanStdout] != "HELLO BOX" || got[tunnel.ChanStderr] != "err" {
		t.Errorf("stdout %q, stderr %q; want \"HELLO BOX\", \"err\"", got[tunnel.ChanStdout], got[tunnel.ChanStderr])
	}
	var st api.Status
	if err := json.Unmarshal([]byte(got[tunnel.ChanStatus]), &st); err != nil {
		t.Fatalf("status %q: %v", got[tunnel.ChanStatus], err)
	}
	if st.Status != "Failure" || st.Reason != "NonZeroExitCode" || st.Details == nil || st.Details.Causes[0].Type != "ExitCode" || st.Details.Causes[0].Message != "3" {
		t.Errorf("status = %+v; want NonZeroExitCode with ExitCode 3", st)
	}
	if ex.id != "u-c-0" || ex.got.TTY {
		t.Errorf("exec ran in %q (tty %v); want u-c-0 without a tty", ex.id, ex.got.TTY)
	}
}

func TestExecTTYResize(t *testing.T) {
	ex := &fakeExec{}
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: ex})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	req := tunnel.ExecRequest{Command: []string{"sh", "0"}, Stdout: true, Stderr: true, TTY: true}
	s, err := tunnel.OpenStream(context.Background(), rt, addr, tunnel.ExecPrefix+"default/p/c?"+req.Query())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tunnel.WriteFrame(s, tunnel.ChanResize, []byte(`{"Width":120,"Height":40}`))
	got := frames(t, s)
	if got[tunnel.ChanStderr] != "" {
		t.Errorf("a TTY session sent stderr %q", got[tunnel.ChanStderr])
	}
	if !strings.Contains(got[tunnel.ChanStatus], `"Success"`) {
		t.Errorf("status = %s; want Success", got[tunnel.ChanStatus])
	}
	if len(ex.resizes) != 1 || ex.resizes[0] != (runtime.TermSize{Width: 120, Height: 40}) {
		t.Errorf("resizes = %v; want [{120 40}]", ex.resizes)
	}
}

func TestStreamRefusals(t *testing.T) {
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: &fakeExec{},
		Dial: func(ctx context.Context, path string, port int) (net.Conn, error) {
			return nil, errors.New("connection refused")
		}})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{tunnel.ExecPrefix + "default/nope/c?command=sh&stdout=1", 404, "pod default/nope"},
		{tunnel.ExecPrefix + "default/p/gone?command=sh&stdout=1", 400, "container gone"},
		{tunnel.ExecPrefix + "default/p/c?stdout=1", 400, "at least one command"},
		{tunnel.ExecPrefix + "default/p?command=sh", 400, "{namespace}/{pod}/{container}"},
		{tunnel.PortForwardPrefix + "default/p?port=99999", 400, "port must be"},
		{tunnel.PortForwardPrefix + "default/p?port=80", 502, "connection refused"},
	} {
		_, err := tunnel.OpenStream(context.Background(), rt, addr, tc.path)
		var ae *tunnel.AgentError
		if !errors.As(err, &ae) || ae.Code != tc.code || !strings.Contains(ae.Message, tc.msg) {
			t.Errorf("OpenStream(%s) = %v; want %d containing %q", tc.path, err, tc.code, tc.msg)
		}
	}
}

func TestExecRuntimeFailure(t *testing.T) {
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: &fakeExec{}})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	s, err := tunnel.OpenStream(context.Background(), rt, addr, tunnel.ExecPrefix+"default/p/c?command=fail&stdout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := frames(t, s)[tunnel.ChanStatus]; !strings.Contains(got, "runtime broke") || !strings.Contains(got, "InternalError") {
		t.Errorf("status = %s; want an InternalError saying why", got)
	}
}

func TestPortForwardPipes(t *testing.T) {
	var gotPath string
	var gotPort int
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: &fakeExec{},
		Dial: func(ctx context.Context, path string, port int) (net.Conn, error) {
			gotPath, gotPort = path, port
			a, b := net.Pipe()
			go func() {
				defer b.Close()
				line, _ := bufio.NewReader(b).ReadString('\n')
				io.WriteString(b, "pod says "+line)
			}()
			return a, nil
		}})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	s, err := tunnel.OpenStream(context.Background(), rt, addr, tunnel.PortForwardPrefix+"default/p?port=8080")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	io.WriteString(s, "hi\n")
	got, _ := io.ReadAll(s)
	if string(got) != "pod says hi\n" || gotPath != "/ns/u" || gotPort != 8080 {
		t.Errorf("port-forward = %q into %s:%d; want \"pod says hi\\n\" into /ns/u:8080", got, gotPath, gotPort)
	}
}

// TestExecIgnoresUnaskedStdin: input sent to a session that did not ask
// for stdin is dropped and does not stall the session.
func TestExecIgnoresUnaskedStdin(t *testing.T) {
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: &fakeExec{}})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	req := tunnel.ExecRequest{Command: []string{"sh", "0"}, Stdout: true, TTY: true}
	s, err := tunnel.OpenStream(context.Background(), rt, addr, tunnel.ExecPrefix+"default/p/c?"+req.Query())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range 3 {
		tunnel.WriteFrame(s, tunnel.ChanStdin, []byte("ignored"))
	}
	tunnel.WriteFrame(s, tunnel.ChanResize, []byte(`{"Width":10,"Height":5}`))
	if got := frames(t, s)[tunnel.ChanStatus]; !strings.Contains(got, "Success") {
		t.Fatalf("status = %q; want Success (the resize after the stdin reached the command)", got)
	}
}

// sizeFirstExec is what the containerd runtime does with a terminal: it
// takes the first size before it starts the command, which only then
// reads stdin. It echoes the size and the input.
type sizeFirstExec struct{}

func (sizeFirstExec) ExecStream(ctx context.Context, id string, o runtime.ExecOptions) (int, error) {
	var sz runtime.TermSize
	select {
	case sz = <-o.Resize:
	case <-ctx.Done():
		return -1, ctx.Err()
	}
	b, _ := io.ReadAll(o.Stdin)
	fmt.Fprintf(o.Stdout, "%dx%d %s", sz.Width, sz.Height, b)
	return 0, nil
}

// TestExecTTYSizeBehindInput: input typed at once can reach the agent
// before the terminal's size (kubectl sends them on separate channels).
// The size must still reach the command first: with stdin in a plain
// pipe, the frame reader waited on input nobody read yet, and the
// terminal was created without its size (a CI failure of
// TestRemoteStreams: stty size said "standard input").
func TestExecTTYSizeBehindInput(t *testing.T) {
	addr := startHandler(t, &Handler{Targets: fakeTargets{}, Exec: sizeFirstExec{}})
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	req := tunnel.ExecRequest{Command: []string{"sh"}, Stdin: true, Stdout: true, TTY: true}
	s, err := tunnel.OpenStream(context.Background(), rt, addr, tunnel.ExecPrefix+"default/p/c?"+req.Query())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tunnel.WriteFrame(s, tunnel.ChanStdin, []byte("stty size\n"))
	tunnel.WriteFrame(s, tunnel.ChanStdin, []byte("exit\n"))
	tunnel.WriteFrame(s, tunnel.ChanResize, []byte(`{"Width":101,"Height":31}`))
	tunnel.WriteFrame(s, tunnel.ChanClose, []byte{tunnel.ChanStdin})
	got := frames(t, s)
	if want := "101x31 stty size\nexit\n"; got[tunnel.ChanStdout] != want {
		t.Errorf("stdout = %q; want %q", got[tunnel.ChanStdout], want)
	}
	if !strings.Contains(got[tunnel.ChanStatus], "Success") {
		t.Errorf("status = %q; want Success", got[tunnel.ChanStatus])
	}
}
