package containerd

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/agent/runtime"
)

// processArgs applies Kubernetes' rules to the image's entrypoint and
// cmd: a command replaces the entrypoint (and drops the image's cmd);
// args replace the cmd.
func processArgs(img ocispec.ImageConfig, command, args []string) []string {
	var out []string
	switch {
	case len(command) > 0:
		out = append(out, command...)
		out = append(out, args...)
	case len(args) > 0:
		out = append(out, img.Entrypoint...)
		out = append(out, args...)
	default:
		out = append(out, img.Entrypoint...)
		out = append(out, img.Cmd...)
	}
	return out
}

// capName normalises a Kubernetes capability name ("net_admin",
// "NET_ADMIN", "CAP_NET_ADMIN") to the OCI form ("CAP_NET_ADMIN").
func capName(c string) string {
	c = strings.ToUpper(strings.TrimSpace(c))
	if !strings.HasPrefix(c, "CAP_") {
		c = "CAP_" + c
	}
	return c
}

func capNames(cs []string) (names []string, all bool) {
	for _, c := range cs {
		if strings.EqualFold(strings.TrimSpace(c), "ALL") {
			all = true
			continue
		}
		names = append(names, capName(c))
	}
	return names, all
}

// validateConfig rejects what containerd would choke on or misread.
func validateConfig(cfg runtime.ContainerConfig) error {
	if err := validPodUID(cfg.PodUID); err != nil {
		return err
	}
	if cfg.Name == "" || strings.ContainsAny(cfg.Name, "/ \x00") || cfg.RestartCount < 0 {
		return fmt.Errorf("%w: container name %q, restart %d", runtime.ErrInvalidConfig, cfg.Name, cfg.RestartCount)
	}
	if cfg.Image == "" {
		return fmt.Errorf("%w: container %s has no image", runtime.ErrInvalidConfig, cfg.Name)
	}
	if cfg.LogPath == "" || !path.IsAbs(cfg.LogPath) {
		return fmt.Errorf("%w: container %s: log path %q must be absolute", runtime.ErrInvalidConfig, cfg.Name, cfg.LogPath)
	}
	if cfg.Sandbox.CgroupParent == "" || !path.IsAbs(cfg.Sandbox.CgroupParent) {
		return fmt.Errorf("%w: container %s: sandbox cgroup parent %q must be absolute", runtime.ErrInvalidConfig, cfg.Name, cfg.Sandbox.CgroupParent)
	}
	for _, m := range cfg.Mounts {
		if !path.IsAbs(m.HostPath) || !path.IsAbs(m.ContainerPath) {
			return fmt.Errorf("%w: container %s: mount %s:%s needs absolute paths", runtime.ErrInvalidConfig, cfg.Name, m.HostPath, m.ContainerPath)
		}
	}
	if cfg.CPURequestMilli < 0 || cfg.CPULimitMilli < 0 || cfg.MemoryLimit < 0 {
		return fmt.Errorf("%w: container %s: negative resources", runtime.ErrInvalidConfig, cfg.Name)
	}
	return nil
}

// shimGroupAnnotation is the runc v2 shim's grouping annotation: containers
// with the same value share one shim process (about 13 MiB RSS each).
const shimGroupAnnotation = "io.containerd.runc.v2.group"

// specOpts builds the OCI spec options for cfg on top of the image's
// config (which oci.WithImageConfig has applied first).
func specOpts(id string, cfg runtime.ContainerConfig, img ocispec.ImageConfig) []oci.SpecOpts {
	opts := []oci.SpecOpts{
		oci.WithProcessArgs(processArgs(img, cfg.Command, cfg.Args)...),
		oci.WithEnv(cfg.Env),
		oci.WithCgroup(path.Join(cfg.Sandbox.CgroupParent, id)),
		// One runc shim per pod, not per container: the shim groups
		// the containers whose specs carry the same group annotation.
		oci.WithAnnotations(map[string]string{shimGroupAnnotation: cfg.PodUID}),
		oci.WithCPUShares(cgroups.MilliCPUToShares(cfg.CPURequestMilli)),
	}
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if cfg.Sandbox.NetNSPath != "" {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: cfg.Sandbox.NetNSPath}))
		host := cfg.Hostname
		if host == "" {
			host = cfg.PodName
		}
		if host != "" {
			opts = append(opts, oci.WithHostname(host))
		}
	} else {
		opts = append(opts,
			oci.WithHostNamespace(specs.NetworkNamespace),
			oci.WithHostNamespace(specs.UTSNamespace),
			oci.WithHostHostsFile, oci.WithHostResolvconf)
	}
	if cfg.CPULimitMilli > 0 {
		opts = append(opts, oci.WithCPUCFS(cgroups.MilliCPUToQuota(cfg.CPULimitMilli, cgroups.QuotaPeriod), cgroups.QuotaPeriod))
	}
	if cfg.MemoryLimit > 0 {
		// Swap equal to the limit: no swap, as the kubelet does on v1.
		opts = append(opts, oci.WithMemoryLimit(uint64(cfg.MemoryLimit)), oci.WithMemorySwap(cfg.MemoryLimit))
	}
	if len(cfg.Mounts) > 0 {
		ms := make([]specs.Mount, 0, len(cfg.Mounts))
		for _, m := range cfg.Mounts {
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			ms = append(ms, specs.Mount{Destination: m.ContainerPath, Type: "bind", Source: m.HostPath, Options: []string{"rbind", "rprivate", mode}})
		}
		opts = append(opts, oci.WithMounts(ms))
	}
	if cfg.RunAsUser != nil {
		opts = append(opts, oci.WithUserID(uint32(*cfg.RunAsUser)))
	}
	if cfg.RunAsGroup != nil {
		gid := uint32(*cfg.RunAsGroup)
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			s.Process.User.GID = gid
			return nil
		})
	}
	if cfg.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithHostDevices, oci.WithAllDevicesAllowed)
	} else {
		drop, dropAll := capNames(cfg.CapDrop)
		add, addAll := capNames(cfg.CapAdd)
		if dropAll {
			opts = append(opts, oci.WithCapabilities(nil))
		} else if len(drop) > 0 {
			opts = append(opts, oci.WithDroppedCapabilities(drop))
		}
		if addAll {
			opts = append(opts, oci.WithAllCurrentCapabilities)
		} else if len(add) > 0 {
			opts = append(opts, oci.WithAddedCapabilities(add))
		}
	}
	if cfg.ReadOnlyRootFilesystem {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	return opts
}
