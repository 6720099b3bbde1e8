package node

import (
	"context"
	"fmt"
	"net"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

// SystemInfo is what the agent reports of its machine.
type SystemInfo struct {
	Hostname    string
	CPUs        int
	MemoryBytes uint64
	DiskBytes   uint64 // of the filesystem holding the data dir
	Kernel      string
	OSImage     string // "Debian GNU/Linux 12 (bookworm)"
	OS          string // "linux"
	Arch        string // "amd64"
	MachineID   string
	BootID      string
	IPs         []string // non-loopback unicast addresses, IPv4 first
}

// ReadSystemInfo reads the machine's facts with gopsutil; dataDir picks
// the filesystem whose size is the node's ephemeral-storage.
func ReadSystemInfo(ctx context.Context, dataDir string) (SystemInfo, error) {
	var si SystemInfo
	var err error
	if si.Hostname, err = os.Hostname(); err != nil {
		return si, fmt.Errorf("hostname: %w", err)
	}
	if si.CPUs, err = cpu.CountsWithContext(ctx, true); err != nil || si.CPUs < 1 {
		si.CPUs = goruntime.NumCPU()
	}
	vm, err := mem.VirtualMemoryWithContext(ctx)
	if err != nil {
		return si, fmt.Errorf("memory: %w", err)
	}
	si.MemoryBytes = vm.Total
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return si, err
	}
	du, err := disk.UsageWithContext(ctx, dataDir)
	if err != nil {
		return si, fmt.Errorf("disk of %s: %w", dataDir, err)
	}
	si.DiskBytes = du.Total
	if hi, err := host.InfoWithContext(ctx); err == nil {
		si.Kernel = hi.KernelVersion
		si.OS = hi.OS
		si.MachineID = hi.HostID
		si.OSImage = osImage(hi.Platform, hi.PlatformVersion)
	}
	if si.OS == "" {
		si.OS = goruntime.GOOS
	}
	si.Arch = goruntime.GOARCH
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		si.BootID = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		if p := prettyName(string(b)); p != "" {
			si.OSImage = p
		}
	}
	si.IPs = localIPs()
	return si, nil
}

func osImage(platform, version string) string {
	return strings.TrimSpace(platform + " " + version)
}

// prettyName is PRETTY_NAME of an os-release file.
func prettyName(osRelease string) string {
	for _, line := range strings.Split(osRelease, "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// localIPs lists the machine's global unicast addresses, IPv4 first.
func localIPs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var v4, v6 []string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || !ipn.IP.IsGlobalUnicast() {
			continue
		}
		if ipn.IP.To4() != nil {
			v4 = append(v4, ipn.IP.String())
		} else {
			v6 = append(v6, ipn.IP.String())
		}
	}
	return append(v4, v6...)
}

// Capacity is the node's capacity from si and maxPods.
func Capacity(si SystemInfo, maxPods int) api.ResourceList {
	return api.ResourceList{
		api.ResourceCPU:              resource.NewQuantity(int64(si.CPUs), resource.DecimalSI),
		api.ResourceMemory:           resource.NewQuantity(int64(si.MemoryBytes), resource.BinarySI),
		api.ResourceEphemeralStorage: resource.NewQuantity(int64(si.DiskBytes), resource.BinarySI),
		api.ResourcePods:             resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}
}

// Allocatable is capacity minus reserved, floored at zero.
func Allocatable(capacity, reserved api.ResourceList) api.ResourceList {
	out := make(api.ResourceList, len(capacity))
	for name, q := range capacity {
		if r, ok := reserved[name]; ok {
			q.Sub(r)
			if q.Sign() < 0 {
				q = resource.NewQuantity(0, resource.DecimalSI)
			}
		}
		out[name] = q
	}
	return out
}

// ParseResourceList parses "cpu=500m,memory=1Gi" (the --system-reserved
// form). Only cpu, memory, ephemeral-storage and pods are known.
func ParseResourceList(s string) (api.ResourceList, error) {
	out := api.ResourceList{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%q: want name=quantity", kv)
		}
		name := api.ResourceName(strings.TrimSpace(k))
		switch name {
		case api.ResourceCPU, api.ResourceMemory, api.ResourceEphemeralStorage, api.ResourcePods:
		default:
			return nil, fmt.Errorf("%q: unknown resource (want cpu, memory, ephemeral-storage or pods)", k)
		}
		q, err := resource.Parse(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: must not be negative", k)
		}
		out[name] = q
	}
	return out, nil
}

// ParseLabels parses "k=v,k2=v2" (the --labels form) and validates each
// key and value as Kubernetes label syntax, and each key as one a node may
// set on itself (api.IsNodeSelfLabel).
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q: want key=value", kv)
		}
		out[k] = v
	}
	if errs := api.ValidateLabels(out, api.NewPath("labels")); len(errs) > 0 {
		return nil, fmt.Errorf("%s", errs[0].Error())
	}
	for k := range out {
		// The server refuses them from a node (NodeRestriction), as
		// Kubernetes refuses them in a kubelet's --node-labels.
		if !api.IsNodeSelfLabel(k) {
			return nil, fmt.Errorf("label %q: a node may not set labels in the kubernetes.io or k8s.io domains other than kubernetes.io/hostname, arch, os, instance type, topology zone and region and the kubelet.kubernetes.io/ and node.kubernetes.io/ prefixes; an admin sets it (kubectl label node)", k)
		}
	}
	return out, nil
}
