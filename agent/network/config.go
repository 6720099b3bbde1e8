package network

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
)

// Defaults of Config.
const (
	DefaultBridge      = "skiff0"
	DefaultVXLAN       = "skiff.vxlan"
	DefaultVXLANPort   = 8472
	DefaultVNI         = 1
	DefaultMTU         = 1450 // 1500 less the VXLAN overhead
	DefaultTable       = "skiff"
	DefaultClusterCIDR = "10.42.0.0/16"
)

// Config wires a Manager. NodeName and StateDir are required.
type Config struct {
	NodeName string
	// StateDir holds ipam.json (<data-dir>/agent/network).
	StateDir string
	// ClusterCIDR is the whole pod network (the server's --cluster-cidr);
	// pod traffic to it is not masqueraded. Default DefaultClusterCIDR.
	ClusterCIDR string
	// ServiceCIDR, when set, is routed onto the bridge, so the node
	// reaches cluster IPs (DNATed on the way) even without a default
	// route, as an offline edge node may have none.
	ServiceCIDR string
	// NodeIP is the local tunnel endpoint; when empty it is taken from the
	// node's own Node (its InternalIP) in SetNodes.
	NodeIP string
	// HostNetNS is the network namespace the node's links live in: "" for
	// the agent's own. Tests pass a namespace they made.
	HostNetNS string

	Bridge    string // default DefaultBridge
	VXLAN     string // default DefaultVXLAN
	VXLANPort int    // default DefaultVXLANPort
	VNI       int    // default DefaultVNI
	MTU       int    // pod MTU; default DefaultMTU
	Table     string // nftables table; default DefaultTable
	// NoOverlay leaves the vxlan device out (single-node clusters).
	NoOverlay bool

	Logger *slog.Logger // default: discard
}

// Validate checks cfg.
func (c *Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("network config: NodeName is required"))
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("network config: StateDir is required"))
	}
	if c.ClusterCIDR != "" {
		if p, err := netip.ParsePrefix(c.ClusterCIDR); err != nil || !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("network config: cluster CIDR %q: want an IPv4 prefix", c.ClusterCIDR))
		}
	}
	if c.ServiceCIDR != "" {
		if p, err := netip.ParsePrefix(c.ServiceCIDR); err != nil || !p.Addr().Is4() {
			errs = append(errs, fmt.Errorf("network config: service CIDR %q: want an IPv4 prefix", c.ServiceCIDR))
		}
	}
	if c.NodeIP != "" {
		if a, err := netip.ParseAddr(c.NodeIP); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("network config: node IP %q: want an IPv4 address", c.NodeIP))
		}
	}
	for _, n := range []string{c.Bridge, c.VXLAN} {
		if len(n) > 15 {
			errs = append(errs, fmt.Errorf("network config: link name %q is longer than 15 bytes", n))
		}
	}
	if c.MTU != 0 && (c.MTU < 576 || c.MTU > 65535) {
		errs = append(errs, fmt.Errorf("network config: MTU %d out of range", c.MTU))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.ClusterCIDR, DefaultClusterCIDR)
	def(&c.Bridge, DefaultBridge)
	def(&c.VXLAN, DefaultVXLAN)
	def(&c.Table, DefaultTable)
	if c.VXLANPort == 0 {
		c.VXLANPort = DefaultVXLANPort
	}
	if c.VNI == 0 {
		c.VNI = DefaultVNI
	}
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}
