package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/peerfeed"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Manager is a node's pod network. Create it with New; Close it when the
// agent stops (links, rules and allocations stay for the next start).
// Its methods are safe for concurrent use; they take one lock, so pod
// set-ups run one at a time (each takes a few milliseconds).
type Manager struct {
	cfg     Config
	cluster netip.Prefix
	log     *slog.Logger

	mu     sync.Mutex
	hostNS netns.NsHandle
	h      *netlink.Handle // netlink in hostNS
	// saveMu orders the writes of the state file; it is taken before
	// mu. gen counts state changes (under mu), savedGen the latest
	// change on disk (under saveMu): set-ups share one write (group
	// commit) rather than fsync one by one under mu.
	saveMu   sync.Mutex
	gen      uint64
	savedGen uint64
	// ips mirrors the addresses of pods whose set-up finished, by UID,
	// so PodIP (status, probes) never waits behind a set-up's state
	// write.
	ips     sync.Map
	st      ipamState // persisted in StateDir
	sn      *subnet   // nil until the podCIDR is known
	netErr  error     // why the bridge is not set up; nil when it is
	nodeIP  netip.Addr
	peers   []Peer
	overErr error // last overlay failure
	closed  bool

	// unsaved is set when a teardown could not save the state (a full
	// disk); Reconcile saves it then.
	unsaved bool
	svc     serviceProxy // its own lock: service syncs do not wait for pod set-ups
}

// New opens the host namespace and the allocation state. It changes
// nothing on the host until the podCIDR is known (SetPodCIDR, SetNodes,
// or a podCIDR persisted by an earlier run).
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	cluster := netip.MustParsePrefix(cfg.ClusterCIDR).Masked()
	st, err := loadState(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	ns, err := openNS(cfg.HostNetNS)
	if err != nil {
		return nil, err
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink: %w", err)
	}
	m := &Manager{cfg: cfg, cluster: cluster, log: cfg.Logger, hostNS: ns, h: h, st: st,
		netErr: fmt.Errorf("node has no podCIDR yet: %w", ErrNotReady)}
	if cfg.NodeIP != "" {
		m.nodeIP = netip.MustParseAddr(cfg.NodeIP)
	}
	for uid, rec := range st.Pods {
		// SetUpPod persists the address before it makes the links: an
		// agent killed in between left an address and no (or half a)
		// veth. Such a pod has no PodIP, so the kubelet sets it up again,
		// with the same address.
		if !vethUp(h, uid) {
			m.log.Info("pod network: the set-up of a pod was cut short; it will be done again", "uid", uid, "ip", rec.IP)
			continue
		}
		m.ips.Store(uid, rec.IP)
	}
	if st.PodCIDR != "" {
		if err := m.setPodCIDRLocked(st.PodCIDR); err != nil {
			m.log.Warn("pod network: persisted podCIDR unusable", "cidr", st.PodCIDR, "err", err)
		}
	}
	return m, nil
}

// Close releases the Manager's handles. It leaves the network as it is.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.h.Close()
	return m.hostNS.Close()
}

// Ready is nil once the bridge and rules are set up for the node's
// podCIDR (node.Config.NetworkReady).
func (m *Manager) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.netErr
}

// SetPodCIDR sets the node's pod network (its Node's spec.podCIDR) and
// sets up the bridge, forwarding and rules for it. Setting the same CIDR
// again repairs what drifted. Pods keep addresses outside a new CIDR
// until they are torn down.
func (m *Manager) SetPodCIDR(cidr string) error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.setPodCIDRLocked(cidr)
}

func (m *Manager) setPodCIDRLocked(cidr string) error {
	sn, err := parseSubnet(cidr)
	if err != nil {
		return err
	}
	if !m.cluster.Contains(sn.prefix.Addr()) {
		return fmt.Errorf("pod CIDR %s is outside the cluster CIDR %s: %w", cidr, m.cluster, ErrInvalid)
	}
	if m.st.PodCIDR != cidr {
		m.st.PodCIDR = cidr
		if err := saveState(m.cfg.StateDir, m.st); err != nil {
			return err
		}
	}
	m.sn = &sn
	m.netErr = m.ensureLocked()
	return m.netErr
}

// ensureLocked (re)applies bridge and rules.
func (m *Manager) ensureLocked() error {
	if err := ensureBridge(m.h, m.hostNS, m.cfg.Bridge, *m.sn); err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	if m.cfg.ServiceCIDR != "" {
		if err := routeServices(m.h, m.cfg.Bridge, netip.MustParsePrefix(m.cfg.ServiceCIDR).Masked(), m.sn.gateway); err != nil {
			return fmt.Errorf("pod network: %w", err)
		}
	}
	return m.syncRulesLocked()
}

func (m *Manager) syncRulesLocked() error {
	in := ruleInput{table: m.cfg.Table, bridge: m.cfg.Bridge, cluster: m.cluster, nat: natRules(m.st.Pods)}
	if m.sn != nil {
		in.podCIDR = m.sn.prefix
	}
	if err := syncTable(m.hostNS, in); err != nil {
		return fmt.Errorf("pod network: %w", err)
	}
	return nil
}

// PodIP is the address of pod uid, "" when it has none.
func (m *Manager) PodIP(uid string) string {
	if ip, ok := m.ips.Load(uid); ok {
		return ip.(string)
	}
	return ""
}

// hostPorts lists pod's published ports.
func hostPorts(pod *api.Pod) []HostPort {
	var out []HostPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, HostPort{Protocol: string(p.Protocol), HostPort: p.HostPort, ContainerPort: p.ContainerPort, HostIP: p.HostIP})
			}
		}
	}
	return out
}

// SetUpPod gives pod uid, whose network namespace is bind-mounted at
// netnsPath, an address (the one it has, if any), its veth and routes,
// and its hostPort rules. The address is persisted before it is used. It
// is idempotent: calling it again repairs the pod's link. hostNetwork
// pods are not for it (ErrInvalid).
func (m *Manager) SetUpPod(ctx context.Context, uid, netnsPath string, pod *api.Pod) (string, error) {
	if uid == "" || strings.ContainsAny(uid, "/\x00") {
		return "", fmt.Errorf("set up pod network: uid %q: %w", uid, ErrInvalid)
	}
	if netnsPath == "" || pod == nil || pod.Spec.HostNetwork {
		return "", fmt.Errorf("set up pod network %s: no network namespace of its own: %w", uid, ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	podNS, err := netns.GetFromPath(netnsPath)
	if err != nil {
		return "", fmt.Errorf("set up pod network %s: open netns %s: %w", uid, netnsPath, err)
	}
	defer podNS.Close()
	ports := hostPorts(pod)
	// The address is allocated and persisted under the lock; the links
	// are made outside it, on a netlink socket of this call's own, so a
	// burst of pods sets up their veths side by side. Each pod's links
	// are its own (named for its UID, in its own netns); the kubelet
	// serialises calls for one pod.
	m.mu.Lock()
	if m.sn == nil || m.netErr != nil {
		err := m.netErr
		m.mu.Unlock()
		return "", fmt.Errorf("set up pod network %s: %w", uid, err)
	}
	sn := *m.sn
	prev, had := m.st.Pods[uid]
	addr, err := m.st.allocate(sn, uid, pod.Namespace+"/"+pod.Name, ports)
	if err != nil {
		m.mu.Unlock()
		return "", fmt.Errorf("set up pod network %s: %w", uid, err)
	}
	m.gen++
	gen := m.gen
	m.mu.Unlock()
	if err := m.persist(gen); err != nil {
		m.mu.Lock()
		m.restoreLocked(uid, prev, had)
		m.gen++
		m.mu.Unlock()
		return "", fmt.Errorf("set up pod network %s: %w", uid, err)
	}
	h, err := netlink.NewHandleAt(m.hostNS, unix.NETLINK_ROUTE)
	if err != nil {
		return "", fmt.Errorf("set up pod network %s: netlink: %w", uid, err)
	}
	defer h.Close()
	if err := setUpVeth(h, m.cfg.Bridge, m.cfg.MTU, uid, podNS, addr, sn); err != nil {
		// the address stays recorded: a retry reuses it, TearDownPod or
		// Reconcile frees it
		return "", fmt.Errorf("set up pod network %s: %w", uid, err)
	}
	if len(ports) > 0 || len(prev.HostPorts) > 0 {
		m.mu.Lock()
		err := m.syncRulesLocked()
		m.mu.Unlock()
		if err != nil {
			return "", fmt.Errorf("set up pod network %s: %w", uid, err)
		}
	}
	m.ips.Store(uid, addr.String())
	return addr.String(), nil
}

// persist returns once the state as of change gen is on disk: if no
// write since has covered it, it writes the state as it is now, which
// covers every change made meanwhile. Called without mu.
func (m *Manager) persist(gen uint64) error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	if m.savedGen >= gen {
		return nil
	}
	m.mu.Lock()
	b, err := json.MarshalIndent(m.st, "", "  ")
	now := m.gen
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encode pod IP state: %w", err)
	}
	if err := writeState(m.cfg.StateDir, b); err != nil {
		return err
	}
	m.savedGen = now
	return nil
}

func (m *Manager) restoreLocked(uid string, prev podRecord, had bool) {
	if had {
		m.st.Pods[uid] = prev
	} else {
		delete(m.st.Pods, uid)
	}
}

// TearDownPod removes pod uid's veth and hostPort rules and frees its
// address. A pod the network does not know is fine.
func (m *Manager) TearDownPod(ctx context.Context, uid string) error {
	if uid == "" {
		return fmt.Errorf("tear down pod network: empty uid: %w", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := deleteLink(m.h, vethName(uid)); err != nil {
		return fmt.Errorf("tear down pod network %s: %w", uid, err)
	}
	rec, ok := m.st.Pods[uid]
	if !ok {
		return nil
	}
	delete(m.st.Pods, uid)
	m.ips.Delete(uid)
	if err := saveState(m.cfg.StateDir, m.st); err != nil {
		// A full disk must not stop a teardown: removing the pod is what
		// frees the disk (its emptyDirs and logs). The state on disk
		// keeps the address a while longer; the next save drops it
		// (Reconcile retries), and an agent restarted meanwhile frees it
		// in Reconcile, the pod being gone.
		m.unsaved = true
		m.log.Warn("pod network: the state could not be saved after a teardown; it will be saved later", "uid", uid, "err", err)
	}
	if len(rec.HostPorts) > 0 {
		return m.syncRulesLocked()
	}
	return nil
}

// Reconcile frees the address and veth of every pod not in live (the
// pods the agent still runs or wants), removes veths skiff made that no
// pod owns, and rewrites the rules: after a crash nothing leaks or
// doubles. The caller must include every pod that may be mid set-up.
func (m *Manager) Reconcile(ctx context.Context, live []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	keepUID := map[string]bool{}
	for _, u := range live {
		keepUID[u] = true
	}
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	changed := false
	for _, uid := range m.st.uids() {
		if keepUID[uid] {
			continue
		}
		m.log.Info("pod network: freeing address of a pod that is gone", "uid", uid, "ip", m.st.Pods[uid].IP)
		delete(m.st.Pods, uid)
		m.ips.Delete(uid)
		changed = true
	}
	if changed || m.unsaved {
		if err := saveState(m.cfg.StateDir, m.st); err != nil {
			errs = append(errs, err)
		} else {
			m.unsaved = false
		}
	}
	keep := map[string]bool{}
	for uid := range m.st.Pods {
		keep[vethName(uid)] = true
	}
	stray, err := strayVeths(m.h, m.cfg.Bridge, keep)
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range stray {
		if err := deleteLink(m.h, n); err != nil {
			errs = append(errs, err)
		}
	}
	if m.sn != nil {
		m.netErr = m.ensureLocked()
		errs = append(errs, m.netErr)
		if !m.cfg.NoOverlay && m.nodeIP.IsValid() {
			m.overErr = m.syncOverlayLocked()
			errs = append(errs, m.overErr)
		}
	}
	return errors.Join(errs...)
}

// SetNodes applies the cluster's Nodes (SetPeers of their Peers).
func (m *Manager) SetNodes(nodes []*api.Node) error { return m.SetPeers(PeersOf(nodes)) }

// SetPeers applies the cluster's Peers: the node's own podCIDR (and
// InternalIP as tunnel endpoint, unless Config.NodeIP is set), and every
// other node as an overlay peer.
func (m *Manager) SetPeers(all []peerfeed.Peer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, n := range all {
		if n.Name != m.cfg.NodeName {
			continue
		}
		if m.cfg.NodeIP == "" {
			if ip, err := netip.ParseAddr(n.IP); err == nil && ip.Is4() {
				m.nodeIP = ip
			}
		}
		if n.PodCIDR != "" && (m.sn == nil || m.sn.prefix.String() != n.PodCIDR || m.netErr != nil) {
			errs = append(errs, m.setPodCIDRLocked(n.PodCIDR))
		}
	}
	m.peers = peersOf(all, m.cfg.NodeName, m.cluster)
	if m.cfg.NoOverlay || m.sn == nil || !m.nodeIP.IsValid() {
		return errors.Join(errs...)
	}
	m.overErr = m.syncOverlayLocked()
	return errors.Join(append(errs, m.overErr)...)
}

func (m *Manager) syncOverlayLocked() error {
	vx, err := ensureVXLAN(m.h, vxlanSpec{name: m.cfg.VXLAN, vni: m.cfg.VNI, port: m.cfg.VXLANPort, mtu: m.cfg.MTU, local: m.nodeIP, podCIDR: m.sn.prefix})
	if err != nil {
		return fmt.Errorf("overlay: %w", err)
	}
	if err := syncPeers(m.h, vx, m.peers); err != nil {
		return fmt.Errorf("overlay: %w", err)
	}
	// A node port on 127.0.0.1 whose endpoint is on another node leaves
	// through the vxlan device (masqueraded on the way).
	if err := writeSysctl(m.hostNS, "net/ipv4/conf/"+m.cfg.VXLAN+"/route_localnet", "1"); err != nil {
		return fmt.Errorf("overlay: %w", err)
	}
	return nil
}

// Peers returns the overlay's remote nodes as last applied.
func (m *Manager) Peers() []Peer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Peer(nil), m.peers...)
}

// Uninstall removes everything the Manager made on the host: pod veths
// on its bridge,
// the vxlan device, the bridge and the nftables table. Allocations stay
// on disk. For `skiff agent` cleanup and tests.
func (m *Manager) Uninstall() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	stray, err := strayVeths(m.h, m.cfg.Bridge, nil)
	errs = append(errs, err)
	for _, n := range stray {
		errs = append(errs, deleteLink(m.h, n))
	}
	errs = append(errs, deleteLink(m.h, m.cfg.VXLAN), deleteLink(m.h, m.cfg.Bridge), deleteTable(m.hostNS, m.cfg.Table))
	m.sn, m.netErr = nil, fmt.Errorf("uninstalled: %w", ErrNotReady)
	return errors.Join(errs...)
}
