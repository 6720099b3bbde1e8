package agent

import (
	"bufio"
	"bytes"
	"context"
	"github.com/skiffhq/skiff/internal/supervise"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffhq/skiff/agent/dns"
	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

// Defaults of the agent's service settings (the server's, for a local
// agent).
const (
	DefaultServiceCIDR   = "10.43.0.0/16"
	DefaultClusterDNS    = "10.43.0.10"
	DefaultClusterDomain = "cluster.local"
	// dnsPort is where the agent's DNS server listens on the bridge
	// gateway; the service proxy sends the cluster DNS address there.
	dnsPort = 53
	// gatewayPoll is how often the agent looks for the bridge gateway
	// before it can serve DNS (the podCIDR comes with the Node).
	gatewayPoll = 100 * time.Millisecond
)

// services runs the node's service proxy and cluster DNS: both are fed
// by one Watcher of Services and EndpointSlices (once joined), and start
// from its checkpoint before that, so they work while the server is away.
type services struct {
	a          *Agent
	dns        *dns.Server
	checkpoint string
	clusterDNS netip.Addr

	mu   sync.Mutex
	last *proxy.Snapshot
	// listening is set once the DNS server listens on the gateway; only
	// then does the proxy send the cluster DNS address there.
	listening atomic.Bool
}

func newServices(a *Agent) (*services, error) {
	ups := a.cfg.DNSUpstreams
	if ups == nil {
		ups = hostResolvers("/etc/resolv.conf")
	}
	d, err := dns.New(dns.Config{Domain: a.cfg.ClusterDomain, Upstreams: ups, Clock: a.clk, Logger: a.log.With("component", "dns")})
	if err != nil {
		return nil, err
	}
	s := &services{a: a, dns: d, checkpoint: a.path("services.json")}
	s.clusterDNS, _ = netip.ParseAddr(a.cfg.ClusterDNS)
	return s, nil
}

// Apply programs snap into the proxy and the DNS server (proxy.Sink).
func (s *services) Apply(snap *proxy.Snapshot) error {
	s.mu.Lock()
	s.last = snap
	s.mu.Unlock()
	if err := s.dns.Apply(snap); err != nil {
		return err
	}
	opt := proxy.Options{NodeName: s.a.cfg.NodeName}
	if gw := s.a.network.Gateway(); gw.IsValid() && s.clusterDNS.IsValid() && s.listening.Load() {
		opt.LocalServices = map[netip.Addr]netip.Addr{s.clusterDNS: gw}
	}
	return s.a.network.SyncServices(proxy.Build(snap.Services, snap.Slices, opt))
}

// start applies the checkpoint and serves DNS once the bridge gateway
// exists; it needs no server.
func (s *services) start(g *supervise.Group) {
	if snap, err := proxy.ReadCheckpoint(s.checkpoint); err != nil {
		s.a.log.Warn("service checkpoint unreadable", "err", err)
	} else if snap != nil {
		if err := s.Apply(snap); err != nil {
			s.a.log.Warn("service rules from the checkpoint not applied", "err", err)
		}
	}
	g.Go("dns", func(ctx context.Context) error {
		// A DNS server that cannot start is logged, not fatal: pods
		// keep running, and reach services by IP.
		s.serveDNS(ctx)
		<-ctx.Done()
		return ctx.Err()
	})
}

// watch starts the Watcher with the node's client.
func (s *services) watch(g *supervise.Group, c client.ListWatcher) {
	w := &proxy.Watcher{Client: c, Sinks: []proxy.Sink{s}, Checkpoint: s.checkpoint, Clock: s.a.clk, Logger: s.a.log.With("component", "services")}
	g.Go("services", w.Run)
}

// serveDNS waits for the bridge gateway, listens there and serves until
// ctx ends. Once it listens, the last snapshot is applied again, so the
// cluster DNS address now leads to it.
func (s *services) serveDNS(ctx context.Context) {
	var gw netip.Addr
	for {
		if gw = s.a.network.Gateway(); gw.IsValid() {
			break
		}
		if !clock.Sleep(ctx, s.a.clk, gatewayPoll) {
			return
		}
	}
	pc, ln, err := s.a.network.ListenDNS(netip.AddrPortFrom(gw, dnsPort))
	if err != nil {
		s.a.log.Error("cluster DNS not served", "err", err)
		return
	}
	s.listening.Store(true)
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last == nil {
		last = &proxy.Snapshot{}
	}
	if err := s.Apply(last); err != nil {
		s.a.log.Warn("service rules not applied", "err", err)
	}
	s.a.log.Info("cluster DNS listening", "addr", netip.AddrPortFrom(gw, dnsPort), "clusterDNS", s.a.cfg.ClusterDNS)
	if err := s.dns.Serve(ctx, pc, ln); err != nil {
		s.a.log.Error("cluster DNS stopped", "err", err)
	}
}

// hostResolvers returns the nameservers of the host's resolv.conf.
func hostResolvers(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			if _, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, f[1])
			}
		}
	}
	return out
}

var _ proxy.Sink = (*services)(nil)
