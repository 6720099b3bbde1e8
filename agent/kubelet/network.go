package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skiffhq/skiff/agent/prober"
	"github.com/skiffhq/skiff/agent/runtime"
	"github.com/skiffhq/skiff/agent/volumes"
	"github.com/skiffhq/skiff/api"
)

// setUpNetwork gives pod its network after its sandbox exists: when the
// sandbox is new, or the pod has no IP yet (an earlier set-up failed).
func (k *Kubelet) setUpNetwork(ctx context.Context, pod *api.Pod, sb runtime.Sandbox, newSandbox bool) error {
	n := k.cfg.Network
	if n == nil || pod.Spec.HostNetwork || sb.NetNSPath == "" {
		return nil
	}
	if !newSandbox && n.PodIP(pod.UID) != "" {
		return nil
	}
	if _, err := n.SetUpPod(ctx, pod.UID, sb.NetNSPath, pod); err != nil {
		return fmt.Errorf("set up pod network: %w", err)
	}
	return nil
}

// reconcileNetwork lets the network free what no pod holds. It runs in the
// sync loop, where no pod can become desired meanwhile, so every pod a
// worker may be setting up is in the live set. While that set stays the
// same it calls Reconcile (a netlink dump and an nftables read at the
// least) once every NetworkResync, not at every housekeeping.
func (k *Kubelet) reconcileNetwork(ctx context.Context) {
	r, ok := k.cfg.Network.(networkReconciler)
	if !ok {
		return
	}
	seen := map[string]bool{}
	var live []string
	add := func(uid string) {
		if !seen[uid] {
			seen[uid] = true
			live = append(live, uid)
		}
	}
	k.mu.Lock()
	for uid := range k.pods {
		add(uid)
	}
	k.mu.Unlock()
	for _, rs := range k.pleg.all() {
		add(rs.UID)
	}
	for _, uid := range k.workers.activeUIDs() {
		add(uid)
	}
	slices.Sort(live)
	key := strings.Join(live, ",")
	now := k.clock.Now()
	if key == k.netLive && !k.netAt.IsZero() && now.Sub(k.netAt) < k.cfg.NetworkResync {
		return
	}
	if err := r.Reconcile(ctx, live); err != nil {
		k.log.Warn("reconcile pod network", "err", err)
		k.netAt = time.Time{} // again at the next housekeeping
		return
	}
	k.netLive, k.netAt = key, now
}

// updateProber tells the prober pod's running app containers.
func (k *Kubelet) updateProber(pod *api.Pod, rs *runtime.PodStatus) {
	if k.cfg.Prober == nil {
		return
	}
	var running []prober.Container
	if rs != nil {
		for _, c := range rs.Containers {
			if !c.Init && c.State == runtime.StateRunning {
				running = append(running, prober.Container{Name: c.Name, ID: c.ID, StartedAt: c.StartedAt})
			}
		}
	}
	k.cfg.Prober.UpdatePod(pod, running)
}

// killUnhealthy stops the running app containers whose liveness (or
// startup) probe failed; syncPod then restarts them per restartPolicy,
// with the crash-loop back-off, counting the restart.
func (k *Kubelet) killUnhealthy(ctx context.Context, pod *api.Pod, rs *runtime.PodStatus) (bool, error) {
	if k.cfg.Prober == nil || rs == nil {
		return false, nil
	}
	killed := false
	for _, c := range rs.Containers {
		if c.Init || c.State != runtime.StateRunning || !k.cfg.Prober.LivenessFailed(pod.UID, c.Name, c.ID) {
			continue
		}
		grace := gracePeriod(pod, nil)
		if spec := findContainer(pod, c.Name); spec != nil {
			for _, p := range []*api.Probe{spec.LivenessProbe, spec.StartupProbe} {
				if p != nil && p.TerminationGracePeriodSeconds != nil {
					grace = max(time.Duration(*p.TerminationGracePeriodSeconds)*time.Second, minGracePeriod)
				}
			}
		}
		k.log.Info("container failed its liveness probe, will be restarted", "pod", podRef(pod), "container", c.Name)
		if err := k.rt.StopContainer(ctx, c.ID, grace); err != nil {
			return killed, fmt.Errorf("stop unhealthy container %s: %w", c.Name, err)
		}
		killed = true
	}
	return killed, nil
}

func findContainer(pod *api.Pod, name string) *api.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// etcMounts writes the pod's /etc/hosts and /etc/resolv.conf under its
// pod directory and adds bind mounts of them, unless the pod uses the
// host's network or the container mounts those paths itself.
func (k *Kubelet) etcMounts(pod *api.Pod, mounts []runtime.Mount) ([]runtime.Mount, error) {
	if pod.Spec.HostNetwork || k.cfg.Network == nil {
		return mounts, nil
	}
	dir := volumes.PodDir(k.cfg.PodsDir, pod)
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	hostsPath, resolvPath := filepath.Join(dir, "etc-hosts"), filepath.Join(dir, "resolv.conf")
	if err := writeFileAtomic(hostsPath, hostsFile(k.podIP(pod), hostname)); err != nil {
		return nil, err
	}
	hostResolv, err := os.ReadFile(k.cfg.ResolvConf)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read %s: %w", k.cfg.ResolvConf, err)
	}
	if err := writeFileAtomic(resolvPath, podResolvConf(pod, hostResolv, k.cfg.ClusterDNS, k.cfg.ClusterDomain)); err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	for _, m := range mounts {
		taken[filepath.Clean(m.ContainerPath)] = true
	}
	if !taken["/etc/hosts"] {
		mounts = append(mounts, runtime.Mount{HostPath: hostsPath, ContainerPath: "/etc/hosts"})
	}
	if !taken["/etc/resolv.conf"] {
		mounts = append(mounts, runtime.Mount{HostPath: resolvPath, ContainerPath: "/etc/resolv.conf"})
	}
	return mounts, nil
}

// hostsFile is a pod's /etc/hosts: loopback names and the pod's own
// address with its hostname.
func hostsFile(podIP, hostname string) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (skiff).\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	if podIP != "" {
		fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
	}
	return b.Bytes()
}

func writeFileAtomic(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
