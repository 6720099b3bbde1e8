package supervise

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// waitFor fails the test if Wait does not return within 10 s of real
// time (the loops here end at once; this only bounds a broken Group).
func waitFor(t *testing.T, g *Group) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
		return nil
	}
}

func blockUntilDone(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestFirstFatalErrorCancelsTheRest(t *testing.T) {
	g, _ := New(context.Background(), nil)
	cause := errors.New("listen tcp 127.0.0.1:10250: bind: address already in use")
	stopped := make(chan string, 2)
	for _, name := range []string{"kubelet", "status"} {
		g.Go(name, func(ctx context.Context) error {
			<-ctx.Done()
			stopped <- name
			return errors.New("late failure while stopping") // shutdown noise, not the cause
		})
	}
	g.Go("logs", func(ctx context.Context) error { return cause })
	err := waitFor(t, g)
	if !errors.Is(err, cause) || !strings.HasPrefix(err.Error(), "logs: ") {
		t.Fatalf("Wait() = %v; want the logs loop's error, named", err)
	}
	if len(stopped) != 2 {
		t.Fatalf("%d other loops stopped; want 2", len(stopped))
	}
}

func TestParentCancelIsAGracefulStop(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g, _ := New(ctx, nil)
	g.Go("a", blockUntilDone)
	g.Go("b", func(ctx context.Context) error { <-ctx.Done(); return nil })
	cancel()
	if err := waitFor(t, g); err != nil {
		t.Fatalf("Wait() after the parent ended = %v; want nil", err)
	}
}

func TestEarlyNilReturnIsFatal(t *testing.T) {
	g, _ := New(context.Background(), nil)
	g.Go("kubelet", func(context.Context) error { return nil })
	g.Go("other", blockUntilDone)
	err := waitFor(t, g)
	if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "kubelet") {
		t.Fatalf("Wait() = %v; want kubelet: %v", err, ErrStopped)
	}
}

func TestFailFromSetupAndStop(t *testing.T) {
	g, ctx := New(context.Background(), nil)
	g.Go("loop", blockUntilDone)
	setup := errors.New("open state db: disk full")
	g.Fail(setup)
	g.Fail(errors.New("second")) // the first wins
	if ctx.Err() == nil {
		t.Fatal("Fail did not cancel the loops' context")
	}
	if err := waitFor(t, g); !errors.Is(err, setup) {
		t.Fatalf("Wait() = %v; want %v", err, setup)
	}

	g, _ = New(context.Background(), nil)
	g.Go("loop", blockUntilDone)
	g.Stop()
	g.Fail(errors.New("after stop")) // stopping: not recorded
	if err := waitFor(t, g); err != nil {
		t.Fatalf("Wait() after Stop = %v; want nil", err)
	}
}
