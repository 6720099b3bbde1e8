package fake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

func TestContainerLifecycleAndEvents(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Unix(1000, 0))
	r := New(c)
	events, err := r.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := runtime.ContainerConfig{PodUID: "u", Name: "c", Image: "img:1"}
	if _, err := r.CreateContainer(ctx, cfg); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("CreateContainer without sandbox = %v; want ErrNotFound", err)
	}
	if _, err := r.CreateSandbox(ctx, runtime.SandboxConfig{PodUID: "u", QOSClass: api.PodQOSBestEffort}); err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, cfg)
	if err != nil || id != runtime.ContainerID("u", "c", 0) {
		t.Fatalf("CreateContainer() = %q, %v", id, err)
	}
	if _, err := r.CreateContainer(ctx, cfg); !errors.Is(err, runtime.ErrAlreadyExists) {
		t.Errorf("second CreateContainer = %v; want ErrAlreadyExists", err)
	}
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if e := <-events; e.Type != runtime.ContainerStarted || e.ContainerID != id {
		t.Errorf("event = %+v; want ContainerStarted", e)
	}
	if err := r.RemoveSandbox(ctx, "u"); err == nil {
		t.Error("RemoveSandbox with a container left = nil; want error")
	}
	c.Advance(5 * time.Second)
	if err := r.Exit(id, 0, true); err != nil {
		t.Fatal(err)
	}
	<-events // OOM
	if e := <-events; e.Type != runtime.ContainerDied {
		t.Errorf("event = %+v; want ContainerDied", e)
	}
	st, _, _ := r.Container(id)
	if st.State != runtime.StateExited || st.Reason != "OOMKilled" || !st.FinishedAt.Equal(time.Unix(1005, 0)) {
		t.Errorf("status = %+v; want exited OOMKilled at 1005", st)
	}
	pods, err := r.ListPods(ctx)
	if err != nil || len(pods) != 1 || pods[0].Sandbox == nil || len(pods[0].Containers) != 1 {
		t.Fatalf("ListPods() = %+v, %v", pods, err)
	}
	if err := r.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveSandbox(ctx, "u"); err != nil {
		t.Fatal(err)
	}
}

func TestStopHonoursGraceOnClock(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Unix(0, 0))
	r := New(c)
	r.IgnoreSIGTERM("c")
	r.CreateSandbox(ctx, runtime.SandboxConfig{PodUID: "u"})
	id, _ := r.CreateContainer(ctx, runtime.ContainerConfig{PodUID: "u", Name: "c", Image: "i"})
	r.StartContainer(ctx, id)
	done := make(chan error)
	go func() { done <- r.StopContainer(ctx, id, 10*time.Second) }()
	c.BlockUntil(1)
	c.Advance(9 * time.Second)
	select {
	case <-done:
		t.Fatal("StopContainer returned before the grace period")
	default:
	}
	c.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st, _, _ := r.Container(id); st.ExitCode != 137 {
		t.Errorf("exit code = %d; want 137", st.ExitCode)
	}
}

func TestInjectedErrors(t *testing.T) {
	ctx := context.Background()
	r := New(clock.NewFake(time.Unix(0, 0)))
	r.SetPullError("bad:1", errors.New("no such host"))
	if _, err := r.EnsureImage(ctx, "bad:1", api.PullIfNotPresent, nil); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("EnsureImage(bad) = %v; want ErrImagePull", err)
	}
	if _, err := r.EnsureImage(ctx, "absent:1", api.PullNever, nil); !errors.Is(err, runtime.ErrImageNeverPull) {
		t.Errorf("EnsureImage(Never) = %v; want ErrImageNeverPull", err)
	}
	boom := errors.New("boom")
	r.SetError(MethodListPods, boom)
	if _, err := r.ListPods(ctx); !errors.Is(err, boom) {
		t.Errorf("ListPods() = %v; want boom", err)
	}
	r.SetError(MethodListPods, nil)
	if _, err := r.ListPods(ctx); err != nil {
		t.Errorf("ListPods() after clearing = %v", err)
	}
	if got := r.CallCount(MethodListPods, ""); got != 2 {
		t.Errorf("CallCount(ListPods) = %d; want 2", got)
	}
}
