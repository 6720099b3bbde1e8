package kubelet

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/config"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

func TestLogRotationAndLogPath(t *testing.T) {
	h := newHarness(t)
	h.k.cfg.MaxLogSize = 1024
	h.send(config.ADD, mkPod("u1", "c"))
	h.settle()
	h.exit("u1", "c", 1) // restart 1
	h.settle()

	cur, err := h.k.LogPath("default", "pod-u1", "c", false)
	if want := filepath.Join(h.dir, "default_pod-u1_u1", "c", "1.log"); err != nil || cur != want {
		t.Fatalf("LogPath() = %q, %v; want %q", cur, err, want)
	}
	// the fake runtime does not write logs; play the shim
	for _, n := range []string{"0.log", "1.log"} {
		if err := os.WriteFile(filepath.Join(h.dir, "default_pod-u1_u1", "c", n), nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	prev, err := h.k.LogPath("default", "pod-u1", "c", true)
	if want := filepath.Join(h.dir, "default_pod-u1_u1", "c", "0.log"); err != nil || prev != want {
		t.Errorf("LogPath(previous) = %q, %v; want %q", prev, err, want)
	}
	if _, err := h.k.LogPath("default", "pod-u1", "nope", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("LogPath(unknown container) = %v; want ErrNotFound", err)
	}
	if _, err := h.k.LogPath("default", "../x", "c", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("LogPath(bad name) = %v; want ErrNotFound", err)
	}

	big := bytes.Repeat([]byte("x"), 2000)
	if err := os.WriteFile(cur, big, 0o640); err != nil {
		t.Fatal(err)
	}
	h.advance(2 * time.Second)
	if fi, err := os.Stat(cur); err != nil || fi.Size() != 0 {
		t.Errorf("log after rotation: %v, %v; want truncated in place", fi, err)
	}
	if b, err := os.ReadFile(cur + ".1"); err != nil || !bytes.Equal(b, big) {
		t.Errorf("rotated copy: %d bytes, %v; want the 2000 bytes", len(b), err)
	}
}

func TestSandboxConfigResources(t *testing.T) {
	q := resource.MustParse
	c := func(cpu, mem string) api.Container {
		r := api.ResourceRequirements{Limits: api.ResourceList{}, Requests: api.ResourceList{}}
		if cpu != "" {
			r.Limits[api.ResourceCPU], r.Requests[api.ResourceCPU] = q(cpu), q(cpu)
		}
		if mem != "" {
			r.Limits[api.ResourceMemory], r.Requests[api.ResourceMemory] = q(mem), q(mem)
		}
		return api.Container{Name: "c", Resources: r}
	}
	tests := []struct {
		name          string
		init, app     []api.Container
		wantQOS       api.PodQOSClass
		req, lim, mem int64
	}{
		{"best effort", nil, []api.Container{{Name: "a"}}, api.PodQOSBestEffort, 0, 0, 0},
		{"guaranteed sum", nil, []api.Container{c("500m", "64Mi"), c("250m", "32Mi")}, api.PodQOSGuaranteed, 750, 750, 96 << 20},
		{"init larger", []api.Container{c("2", "1Gi")}, []api.Container{c("500m", "64Mi")}, api.PodQOSGuaranteed, 2000, 2000, 1 << 30},
		{"one unbounded", nil, []api.Container{c("500m", "64Mi"), c("", "")}, api.PodQOSBurstable, 500, 0, 0},
	}
	for _, tt := range tests {
		pod := &api.Pod{ObjectMeta: api.ObjectMeta{UID: "u"}, Spec: api.PodSpec{InitContainers: tt.init, Containers: tt.app}}
		got := sandboxConfig(pod)
		if got.QOSClass != tt.wantQOS || got.CPURequestMilli != tt.req || got.CPULimitMilli != tt.lim || got.MemoryLimit != tt.mem {
			t.Errorf("%s: sandboxConfig() = %s req %d lim %d mem %d; want %s %d %d %d", tt.name,
				got.QOSClass, got.CPURequestMilli, got.CPULimitMilli, got.MemoryLimit, tt.wantQOS, tt.req, tt.lim, tt.mem)
		}
	}
}

func TestGracePeriod(t *testing.T) {
	pod := &api.Pod{}
	if got := gracePeriod(pod, nil); got != 30*time.Second {
		t.Errorf("default grace = %v; want 30s", got)
	}
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(45))
	if got := gracePeriod(pod, nil); got != 45*time.Second {
		t.Errorf("spec grace = %v; want 45s", got)
	}
	pod.DeletionGracePeriodSeconds = ptr(int64(0))
	if got := gracePeriod(pod, nil); got != 2*time.Second {
		t.Errorf("deletion grace 0 = %v; want the 2s minimum", got)
	}
	if got := gracePeriod(pod, ptr(int64(7))); got != 7*time.Second {
		t.Errorf("override = %v; want 7s", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New(empty config) = nil error; want one")
	}
	if _, err := New(Config{NodeName: "n", PodsDir: "/x"}); err == nil {
		t.Error("New(no runtime) = nil error; want one")
	}
}
