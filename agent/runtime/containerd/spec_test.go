package containerd

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/agent/runtime"
)

func TestProcessArgs(t *testing.T) {
	img := ocispec.ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"--default"}}
	for _, tc := range []struct {
		name          string
		command, args []string
		want          []string
	}{
		{"image defaults", nil, nil, []string{"/entry", "--default"}},
		{"command replaces entrypoint and cmd", []string{"/bin/sh"}, nil, []string{"/bin/sh"}},
		{"args replace cmd", nil, []string{"-v"}, []string{"/entry", "-v"}},
		{"command and args", []string{"/bin/sh", "-c"}, []string{"echo hi"}, []string{"/bin/sh", "-c", "echo hi"}},
	} {
		if got := processArgs(img, tc.command, tc.args); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: processArgs(%q, %q) = %q; want %q", tc.name, tc.command, tc.args, got, tc.want)
		}
	}
	if got := processArgs(ocispec.ImageConfig{Cmd: []string{"sh"}}, nil, []string{"-x"}); !reflect.DeepEqual(got, []string{"-x"}) {
		t.Errorf("args with no entrypoint = %q; want [-x]", got)
	}
}

func TestCapNames(t *testing.T) {
	names, all := capNames([]string{"net_admin", "CAP_SYS_TIME", " SYS_PTRACE "})
	if all || !reflect.DeepEqual(names, []string{"CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_SYS_PTRACE"}) {
		t.Errorf("capNames = %q, %v", names, all)
	}
	if _, all := capNames([]string{"all"}); !all {
		t.Error(`capNames(["all"]) did not report ALL`)
	}
}

func TestExitReasonAndFacts(t *testing.T) {
	for _, tc := range []struct {
		code int32
		oom  bool
		want string
	}{{0, false, "Completed"}, {3, false, "Error"}, {137, true, "OOMKilled"}, {0, true, "OOMKilled"}, {137, false, "Error"}} {
		if got := exitReason(tc.code, tc.oom); got != tc.want {
			t.Errorf("exitReason(%d, %v) = %q; want %q", tc.code, tc.oom, got, tc.want)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	f, ok := factsFromLabels(map[string]string{labelExitCode: "3", labelExitAt: at.Format(time.RFC3339Nano), labelExitReason: "Error"})
	if !ok || f.code != 3 || !f.at.Equal(at) || f.reason != "Error" {
		t.Errorf("factsFromLabels = %+v, %v", f, ok)
	}
	if _, ok := factsFromLabels(map[string]string{}); ok {
		t.Error("factsFromLabels(no labels) reported facts")
	}
}

func validConfig() runtime.ContainerConfig {
	return runtime.ContainerConfig{
		PodUID: "u1", Name: "app", Image: "docker.io/library/busybox:latest", LogPath: "/var/log/x.log",
		Sandbox: runtime.Sandbox{PodUID: "u1", CgroupParent: "/skiff/burstable/podu1", NetNSPath: "/data/netns/u1"},
	}
}

func TestValidateConfig(t *testing.T) {
	if err := validateConfig(validConfig()); err != nil {
		t.Fatalf("validateConfig(valid) = %v", err)
	}
	for name, mut := range map[string]func(*runtime.ContainerConfig){
		"bad uid":          func(c *runtime.ContainerConfig) { c.PodUID = "../x" },
		"no name":          func(c *runtime.ContainerConfig) { c.Name = "" },
		"slash in name":    func(c *runtime.ContainerConfig) { c.Name = "a/b" },
		"no image":         func(c *runtime.ContainerConfig) { c.Image = "" },
		"relative log":     func(c *runtime.ContainerConfig) { c.LogPath = "x.log" },
		"no cgroup parent": func(c *runtime.ContainerConfig) { c.Sandbox.CgroupParent = "" },
		"relative mount": func(c *runtime.ContainerConfig) {
			c.Mounts = []runtime.Mount{{HostPath: "data", ContainerPath: "/data"}}
		},
		"negative memory":   func(c *runtime.ContainerConfig) { c.MemoryLimit = -1 },
		"negative restarts": func(c *runtime.ContainerConfig) { c.RestartCount = -1 },
	} {
		c := validConfig()
		mut(&c)
		if err := validateConfig(c); !errors.Is(err, runtime.ErrInvalidConfig) {
			t.Errorf("validateConfig(%s) = %v; want ErrInvalidConfig", name, err)
		}
	}
}

func genSpec(t *testing.T, cfg runtime.ContainerConfig, img ocispec.ImageConfig) *oci.Spec {
	t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), "skiff")
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "c1"}, specOpts("c1", cfg, img)...)
	if err != nil {
		t.Fatalf("GenerateSpec: %v", err)
	}
	return s
}

func TestSpecOpts(t *testing.T) {
	cfg := validConfig()
	cfg.Command, cfg.Args = []string{"/bin/app"}, []string{"--port=80"}
	cfg.Env = []string{"A=1", "PATH=/custom"}
	cfg.WorkingDir = "/work"
	cfg.Hostname = "web-0"
	cfg.CPURequestMilli, cfg.CPULimitMilli, cfg.MemoryLimit = 250, 1500, 32<<20
	cfg.Mounts = []runtime.Mount{{HostPath: "/h/data", ContainerPath: "/data", ReadOnly: true}, {HostPath: "/h/tmp", ContainerPath: "/tmp"}}
	gid := int64(7)
	cfg.RunAsGroup = &gid
	cfg.ReadOnlyRootFilesystem = true
	cfg.CapAdd, cfg.CapDrop = []string{"NET_ADMIN"}, []string{"chown"}
	s := genSpec(t, cfg, ocispec.ImageConfig{Entrypoint: []string{"/entry"}})

	if !reflect.DeepEqual(s.Process.Args, []string{"/bin/app", "--port=80"}) {
		t.Errorf("args = %q", s.Process.Args)
	}
	if !slices.Contains(s.Process.Env, "A=1") || !slices.Contains(s.Process.Env, "PATH=/custom") {
		t.Errorf("env = %q", s.Process.Env)
	}
	if s.Process.Cwd != "/work" || s.Hostname != "web-0" || !s.Root.Readonly || s.Process.User.GID != 7 {
		t.Errorf("cwd %q hostname %q readonly %v gid %d", s.Process.Cwd, s.Hostname, s.Root.Readonly, s.Process.User.GID)
	}
	if s.Linux.CgroupsPath != "/skiff/burstable/podu1/c1" {
		t.Errorf("cgroupsPath = %q", s.Linux.CgroupsPath)
	}
	cpu, mem := s.Linux.Resources.CPU, s.Linux.Resources.Memory
	if *cpu.Shares != 256 || *cpu.Quota != 150000 || *cpu.Period != 100000 || *mem.Limit != 32<<20 || *mem.Swap != 32<<20 {
		t.Errorf("resources: shares %d quota %d period %d memory %d swap %d", *cpu.Shares, *cpu.Quota, *cpu.Period, *mem.Limit, *mem.Swap)
	}
	var netns string
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			netns = ns.Path
		}
	}
	if netns != "/data/netns/u1" {
		t.Errorf("network namespace path = %q", netns)
	}
	var binds []specs.Mount
	for _, m := range s.Mounts {
		if m.Type == "bind" && (m.Destination == "/data" || m.Destination == "/tmp") {
			binds = append(binds, m)
		}
	}
	if len(binds) != 2 || !slices.Contains(binds[0].Options, "ro") || !slices.Contains(binds[1].Options, "rw") {
		t.Errorf("bind mounts = %+v", binds)
	}
	caps := s.Process.Capabilities.Bounding
	if !slices.Contains(caps, "CAP_NET_ADMIN") || slices.Contains(caps, "CAP_CHOWN") {
		t.Errorf("bounding capabilities = %q; want NET_ADMIN added, CHOWN dropped", caps)
	}
}

func TestSpecOptsHostNetworkAndDropAll(t *testing.T) {
	cfg := validConfig()
	cfg.Sandbox.NetNSPath = ""
	cfg.CapDrop = []string{"ALL"}
	cfg.CapAdd = []string{"NET_BIND_SERVICE"}
	s := genSpec(t, cfg, ocispec.ImageConfig{Cmd: []string{"sh"}})
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace || ns.Type == specs.UTSNamespace {
			t.Errorf("hostNetwork spec has its own %s namespace", ns.Type)
		}
	}
	if *s.Linux.Resources.CPU.Shares != 2 || s.Linux.Resources.CPU.Quota != nil || s.Linux.Resources.Memory != nil && s.Linux.Resources.Memory.Limit != nil {
		t.Errorf("best-effort resources = %+v", s.Linux.Resources)
	}
	if !reflect.DeepEqual(s.Process.Capabilities.Bounding, []string{"CAP_NET_BIND_SERVICE"}) {
		t.Errorf("capabilities after drop ALL, add NET_BIND_SERVICE = %q", s.Process.Capabilities.Bounding)
	}
	if !reflect.DeepEqual(s.Process.Args, []string{"sh"}) {
		t.Errorf("args = %q", s.Process.Args)
	}
}
