package kubelet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
)

// containerHash identifies c's spec: a container whose running instance
// carries another hash is replaced. It is stable across agent restarts
// (the JSON of the spec), so adopted containers keep running.
func containerHash(c *api.Container) string {
	b, err := json.Marshal(c)
	if err != nil { // cannot happen for api.Container; fall back to the name
		b = []byte(c.Name)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// logPath is <podsDir>/<ns>_<name>_<uid>/<container>/<restart>.log.
func logPath(podsDir string, pod *api.Pod, container string, restart int) string {
	return filepath.Join(volumes.PodDir(podsDir, pod), container, strconv.Itoa(restart)+".log")
}

// containerResources are c's cpu (milli) request and limit and memory
// limit (bytes); 0 means unset.
func containerResources(c *api.Container) (cpuReq, cpuLim, memLim int64) {
	if q, ok := c.Resources.Requests[api.ResourceCPU]; ok {
		cpuReq = q.MilliValue()
	}
	if q, ok := c.Resources.Limits[api.ResourceCPU]; ok {
		cpuLim = q.MilliValue()
	}
	if q, ok := c.Resources.Limits[api.ResourceMemory]; ok {
		memLim = q.Value()
	}
	if cpuReq == 0 && cpuLim > 0 {
		cpuReq = cpuLim
	}
	return cpuReq, cpuLim, memLim
}

// sandboxConfig is pod's sandbox: pod-level resources are the sum over the
// app containers or the largest init container, whichever is larger, as
// the kubelet sizes the pod cgroup. A limit is set only when every
// container has one; BestEffort pods get none.
func sandboxConfig(pod *api.Pod) runtime.SandboxConfig {
	cfg := runtime.SandboxConfig{
		PodUID:      pod.UID,
		PodName:     pod.Name,
		Namespace:   pod.Namespace,
		HostNetwork: pod.Spec.HostNetwork,
		QOSClass:    api.QOSClass(pod),
	}
	if cfg.QOSClass == api.PodQOSBestEffort {
		return cfg
	}
	var req, lim, mem int64
	cpuBounded, memBounded := true, true
	for i := range pod.Spec.Containers {
		r, l, m := containerResources(&pod.Spec.Containers[i])
		req += r
		lim += l
		mem += m
		cpuBounded = cpuBounded && l > 0
		memBounded = memBounded && m > 0
	}
	for i := range pod.Spec.InitContainers {
		r, l, m := containerResources(&pod.Spec.InitContainers[i])
		req = max(req, r)
		lim = max(lim, l)
		mem = max(mem, m)
		cpuBounded = cpuBounded && l > 0
		memBounded = memBounded && m > 0
	}
	cfg.CPURequestMilli = req
	if cpuBounded {
		cfg.CPULimitMilli = lim
	}
	if memBounded {
		cfg.MemoryLimit = mem
	}
	return cfg
}

// applySecurity fills cfg's security settings from the pod and container
// security contexts (the container's win). runAsNonRoot with an explicit
// uid 0 is an ErrConfig; with no uid given, the image's user is not
// checked (skiff does not read image configs here).
func applySecurity(cfg *runtime.ContainerConfig, pod *api.Pod, c *api.Container) error {
	var nonRoot *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		cfg.RunAsUser, cfg.RunAsGroup, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			cfg.RunAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			cfg.RunAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		cfg.Privileged = isTrue(sc.Privileged)
		cfg.ReadOnlyRootFilesystem = isTrue(sc.ReadOnlyRootFilesystem)
		if caps := sc.Capabilities; caps != nil {
			cfg.CapAdd = slices.Clone(caps.Add)
			cfg.CapDrop = slices.Clone(caps.Drop)
		}
	}
	if isTrue(nonRoot) && cfg.RunAsUser != nil && *cfg.RunAsUser == 0 {
		return errConfigf("container's runAsUser breaks non-root policy (pod: %q, container: %s)", pod.Name, c.Name)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
