package testenv

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartChild runs the test binary again as a child process that runs
// only the test named childTest (which must print "READY <value>" on
// stdout once it serves), with env added to the child's environment. It
// returns the value and the process; the child is killed when the test
// ends. Under make test-arm (SKIFF_TEST_EMULATOR) the child runs under
// the same emulator as the test.
func StartChild(tb testing.TB, childTest string, env ...string) (string, *exec.Cmd) {
	tb.Helper()
	args := []string{os.Args[0], "-test.run=^" + childTest + "$", "-test.count=1"}
	if emu := os.Getenv("SKIFF_TEST_EMULATOR"); emu != "" {
		args = append([]string{emu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // already dead in the test's main path
		cmd.Wait()         //nolint:errcheck // as above
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				select {
				case ready <- v:
				default:
				}
			}
		}
	}()
	select {
	case v := <-ready:
		return v, cmd
	case <-time.After(Bound(60 * time.Second)):
		tb.Fatalf("child %s not ready in %v: %s", childTest, Bound(60*time.Second), stderr.String())
	}
	return "", nil
}

// SyncBuffer is a bytes.Buffer safe for concurrent writers and readers:
// a child process's output read while it runs, a logger's sink.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
