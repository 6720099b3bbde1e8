package storage_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/storage"
	"github.com/skiffhq/skiff/storage/storagetest"
)

// Environment of the crash child: the database and the round number.
const (
	crashDBEnv    = "SKIFF_STORAGE_CRASH_DB"
	crashRoundEnv = "SKIFF_STORAGE_CRASH_ROUND"
	crashWriters  = 8
	// emulatorEnv names a user-mode emulator (qemu-arm-static) that
	// runs this test binary; scripts/test-arm sets it, since without
	// binfmt_misc the kernel cannot exec a foreign binary directly.
	emulatorEnv = "SKIFF_TEST_EMULATOR"
)

// TestCrashChild is not a test of its own: TestCrashKill9 runs
// the test binary with only this test selected and the environment set.
// It writes from 8 goroutines and prints every write after it was
// acknowledged, until it is killed. Without the environment it returns.
func TestCrashChild(t *testing.T) {
	ds := os.Getenv(crashDBEnv)
	if ds == "" {
		return
	}
	round := os.Getenv(crashRoundEnv)
	ctx := context.Background()
	opts, err := storage.ParseDatastore(ds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child datastore:", err)
		os.Exit(3)
	}
	s, err := storage.Open(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	var out sync.Mutex
	ack := func(format string, args ...any) {
		line := fmt.Sprintf(format+"\n", args...)
		out.Lock()
		os.Stdout.WriteString(line) // unbuffered: in the pipe before the next write starts
		out.Unlock()
	}
	var wg sync.WaitGroup
	for g := range crashWriters {
		wg.Go(func() {
			counter := fmt.Sprintf("counter-%d", g)
			for i := 0; ; i++ {
				name := fmt.Sprintf("r%s-g%d-%d", round, g, i)
				if err := s.Create(ctx, storagetest.ConfigMap("default", name, map[string]string{"i": strconv.Itoa(i)})); err != nil {
					fmt.Fprintln(os.Stderr, "child create:", err)
					os.Exit(4)
				}
				ack("ACK create %s", name)
				cm := storagetest.ConfigMap("default", counter, map[string]string{"n": name})
				err := s.Update(ctx, cm)
				if errors.Is(err, storage.ErrNotFound) {
					err = s.Create(ctx, cm)
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "child update:", err)
					os.Exit(5)
				}
				ack("ACK counter %s %s", counter, name)
			}
		})
	}
	wg.Wait()
}

// TestCrashKill9 kills a writing process with SIGKILL mid-batch, 20
// rounds per backend, and checks that every acknowledged write is there.
func TestCrashKill9(t *testing.T) {
	storagetest.ForEachBackend(t, testCrashKill9)
}

func testCrashKill9(t *testing.T, b storagetest.Backend) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	opts := b.Fresh(t, storage.Options{})
	ds := opts.Postgres
	if ds == "" {
		ds = storage.SQLiteScheme + opts.Path
	}
	rounds := 20
	if testing.Short() {
		// make test-arm, where every round starts the child under qemu.
		rounds = 6
	}
	total := 0
	for round := range rounds {
		acked := crashOnce(t, ds, round, time.Duration(50+rng.IntN(351))*time.Millisecond)
		total += len(acked)

		s, err := storage.Open(context.Background(), opts)
		if err != nil {
			t.Fatalf("round %d: Open after kill -9 = %v; want nil", round, err)
		}
		checkAcked(t, s, fmt.Sprintf("round %d", round), acked)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d rounds, %d acknowledged writes checked", rounds, total)
}

// checkAcked checks that s holds every write TestCrashChild
// acknowledged (its ACK lines): each create, and each counter at or past
// its last acknowledged value. when names the check in errors.
func checkAcked(t *testing.T, s *storage.Store, when string, acked []string) {
	t.Helper()
	last := map[string]string{} // counter -> last acknowledged value
	for _, line := range acked {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "ACK" {
			t.Fatalf("%s: malformed acknowledgement %q", when, line)
		}
		switch f[1] {
		case "create":
			if _, err := s.Get(context.Background(), "configmaps", "default", f[2]); err != nil {
				t.Errorf("%s: acknowledged create %s: Get = %v; want nil", when, f[2], err)
			}
		case "counter":
			if len(f) < 4 {
				t.Fatalf("%s: malformed acknowledgement %q", when, line)
			}
			last[f[2]] = f[3]
		}
	}
	for counter, want := range last {
		obj, err := s.Get(context.Background(), "configmaps", "default", counter)
		if err != nil {
			t.Fatalf("%s: Get(%s) = %v", when, counter, err)
		}
		// The counter holds the name of its goroutine's latest create;
		// names count up, so it must be at or past the acknowledged one.
		if got := obj.(*api.ConfigMap).Data["n"]; seq(got) < seq(want) {
			t.Errorf("%s: %s = %s; acknowledged %s was lost", when, counter, got, want)
		}
	}
}

// powerCutAckedEnv names the file of ACK lines TestPowerCutVerify checks.
const powerCutAckedEnv = "SKIFF_STORAGE_POWERCUT_ACKED"

// TestPowerCutVerify is not a test of its own: test/vm's power-cut run
// (go run ./test/vm -powercut, in make test-vm) boots a VM whose disk
// TestCrashChild writes to, cuts its power (sysrq b: no sync, no
// unmount), boots it again and runs this test there, with the ACK lines
// the console showed before the cut. Every one must be in the database.
// Without the environment it returns.
func TestPowerCutVerify(t *testing.T) {
	path := os.Getenv(powerCutAckedEnv)
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	acked := strings.Split(strings.TrimSpace(string(b)), "\n")
	opts, err := storage.ParseDatastore(os.Getenv(crashDBEnv))
	if err != nil {
		t.Fatal(err)
	}
	s, err := storage.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open after the power cut = %v; want nil", err)
	}
	defer s.Close()
	checkAcked(t, s, "after the power cut", acked)
	t.Logf("%d acknowledged writes checked after the power cut; revision %d", len(acked), s.Revision())
}

// seq orders names "r<round>-g<g>-<i>" of one goroutine. It is an int64
// so the round survives the shift on 32-bit platforms, where an int
// would drop it and a write lost from an earlier round could compare as
// newer.
func seq(name string) int64 {
	var round, g, i int64
	fmt.Sscanf(name, "r%d-g%d-%d", &round, &g, &i)
	return round<<32 | i
}

// selfCommand runs this test binary again with args, through the
// emulator named by SKIFF_TEST_EMULATOR when it is set.
func selfCommand(args ...string) *exec.Cmd {
	if emu := os.Getenv(emulatorEnv); emu != "" {
		return exec.Command(emu, append([]string{os.Args[0]}, args...)...)
	}
	return exec.Command(os.Args[0], args...)
}

// crashOnce runs the child against datastore ds, kills it with SIGKILL delay after
// its first acknowledged write, and returns the acknowledged lines.
func crashOnce(t *testing.T, ds string, round int, delay time.Duration) []string {
	t.Helper()
	cmd := selfCommand("-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDBEnv+"="+ds, crashRoundEnv+"="+strconv.Itoa(round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ACK ") {
				if len(lines) == 0 {
					close(first)
				}
				lines = append(lines, sc.Text())
			}
		}
	}()
	select {
	case <-first:
	case <-done:
		cmd.Wait()
		t.Fatalf("round %d: child exited before writing: %s", round, stderr.String())
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("round %d: child wrote nothing in 20s: %s", round, stderr.String())
	}
	time.Sleep(delay)
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-done
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != -1 {
		t.Fatalf("round %d: child ended with %v, not by SIGKILL: %s", round, err, stderr.String())
	}
	// Each line is one write(2) of less than PIPE_BUF bytes, so a kill
	// cannot tear one.
	return lines
}

// TestCrashSeqOrdersRoundsFirst guards the crash test's own ordering: a
// name from a later round is newer whatever its index, also where int is
// 32 bits wide (make test-arm runs this package as armv7).
func TestCrashSeqOrdersRoundsFirst(t *testing.T) {
	for _, c := range []struct{ older, newer string }{
		{"r0-g3-99", "r1-g3-0"},
		{"r1-g0-5", "r1-g0-6"},
		{"r7-g2-2147483647", "r8-g2-0"},
	} {
		if seq(c.older) >= seq(c.newer) {
			t.Errorf("seq(%q) = %d >= seq(%q) = %d; want older < newer", c.older, seq(c.older), c.newer, seq(c.newer))
		}
	}
}
