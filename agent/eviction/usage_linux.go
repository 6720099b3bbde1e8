package eviction

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/skiffhq/skiff/agent/cgroups"
	"github.com/skiffhq/skiff/api"
)

// userHZ is the kernel's USER_HZ, the unit of /proc/stat: 100 on every
// Linux architecture skiff runs on.
const userHZ = 100

// nodeCPU sums the busy fields of the "cpu" line of /proc/stat (user,
// nice, system, irq, softirq, steal; not idle or iowait) in nanoseconds.
func nodeCPU(file string) (uint64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, fmt.Errorf("node cpu: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("node cpu: read %s: %w", file, err)
	}
	return parseCPULine(line)
}

// parseCPULine parses the aggregate "cpu  u n s idle iowait irq softirq
// steal ..." line.
func parseCPULine(line string) (uint64, error) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("node cpu: parse %q", line)
	}
	var ticks uint64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("node cpu: parse %q: %w", line, err)
		}
		ticks += v
	}
	return ticks * (1e9 / userHZ), nil
}

// PodDetail is what PodDetails reads beyond Summary: the containers'
// cgroups and the pod's network.
type PodDetail struct {
	Containers map[string]cgroups.Usage // by container name
	Network    *api.NetworkUsage        // nil for host-network pods or unknown
}

// PodDetails reads the container cgroups and network counters of pods.
// Unlike Summary it is not on the eviction cycle: metrics call it every
// report. Pods without a cgroup are left out; a container's cgroup is
// matched to its name through the pod's containerStatuses.
func (n *NodeStats) PodDetails(ctx context.Context, pods []*api.Pod) map[string]PodDetail {
	out := make(map[string]PodDetail, len(pods))
	for _, pod := range pods {
		if ctx.Err() != nil {
			break
		}
		cg, err := n.cfg.Cgroups.Pod(pod.UID)
		if err != nil {
			continue
		}
		d := PodDetail{Containers: map[string]cgroups.Usage{}}
		names := containerNames(pod)
		kids, err := n.cfg.Cgroups.ContainersOf(cg)
		if err == nil {
			for _, id := range kids {
				name, ok := names[id]
				if !ok {
					continue // the sandbox, or a container not yet in status
				}
				if u, err := n.cfg.Cgroups.UsageOf(path.Join(cg.Path, id)); err == nil {
					d.Containers[name] = u
				}
			}
		}
		if !pod.Spec.HostNetwork {
			if pid, err := n.cfg.Cgroups.FirstProcess(cg); err == nil && pid > 0 {
				if nu, err := readNetDev(fmt.Sprintf("/proc/%d/net/dev", pid)); err == nil {
					d.Network = &nu
				}
			}
		}
		out[pod.UID] = d
	}
	return out
}

// containerNames maps the running containers' IDs to their names.
func containerNames(pod *api.Pod) map[string]string {
	out := map[string]string{}
	for _, list := range [][]api.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range list {
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok && id != "" {
				out[id] = cs.Name
			}
		}
	}
	return out
}

// readNetDev sums received and sent bytes over the interfaces of a
// /proc/<pid>/net/dev file (the process's network namespace), loopback
// left out.
func readNetDev(file string) (api.NetworkUsage, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return api.NetworkUsage{}, err
	}
	if err != nil {
		return api.NetworkUsage{}, fmt.Errorf("read %s: %w", file, err)
	}
	return parseNetDev(b)
}

// parseNetDev parses net/dev: two header lines, then "iface: rx_bytes
// rx_packets ... (8 rx fields) tx_bytes ...".
func parseNetDev(b []byte) (api.NetworkUsage, error) {
	var u api.NetworkUsage
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) < 2 {
		return u, fmt.Errorf("parse net/dev: %d lines", len(lines))
	}
	for _, l := range lines[2:] {
		name, rest, ok := strings.Cut(string(l), ":")
		if !ok {
			continue
		}
		if strings.TrimSpace(name) == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return api.NetworkUsage{}, fmt.Errorf("parse net/dev line %q", l)
		}
		rx, err1 := strconv.ParseUint(f[0], 10, 64)
		tx, err2 := strconv.ParseUint(f[8], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return api.NetworkUsage{}, fmt.Errorf("parse net/dev line %q: %w", l, err)
		}
		u.RxBytes += rx
		u.TxBytes += tx
	}
	return u, nil
}

// parseMeminfo reads MemTotal, MemFree and Inactive(file) (kB) of the
// text of /proc/meminfo into capacity and working set (bytes).
func parseMeminfo(b []byte) (MemoryStats, error) {
	keys := [...]string{"MemTotal:", "MemFree:", "Inactive(file):"}
	var vals [len(keys)]uint64
	var found [len(keys)]bool
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		f := bytes.Fields(line)
		if len(f) < 2 {
			continue
		}
		for i, k := range keys {
			if found[i] || string(f[0]) != k {
				continue
			}
			v, err := strconv.ParseUint(string(f[1]), 10, 64)
			if err != nil {
				return MemoryStats{}, fmt.Errorf("node memory: parse %q: %w", line, err)
			}
			vals[i], found[i] = v<<10, true
		}
	}
	for i, k := range keys {
		if !found[i] {
			return MemoryStats{}, fmt.Errorf("node memory: no %s in /proc/meminfo", strings.TrimSuffix(k, ":"))
		}
	}
	total, free, inactiveFile := vals[0], vals[1], vals[2]
	var ws uint64
	if usage := total - min(free, total); usage > inactiveFile {
		ws = usage - inactiveFile
	}
	return MemoryStats{Capacity: int64(total), WorkingSet: int64(ws)}, nil
}
