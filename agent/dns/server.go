package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/internal/clock"
)

// Defaults of Config.
const (
	DefaultDomain = "cluster.local"
	DefaultTTL    = 5 // seconds, for cluster records, as CoreDNS's kubernetes plugin
	// negativeTTL is the SOA minimum: how long resolvers cache a
	// cluster name that does not exist.
	negativeTTL     = 5
	maxCacheEntries = 10000
	maxCacheTTL     = 300 * time.Second
	upstreamTimeout = 2 * time.Second
)

// Config configures a Server.
type Config struct {
	// Domain is the cluster domain [cluster.local].
	Domain string
	// Upstreams are the resolvers ("ip" or "ip:port") names outside the
	// cluster are forwarded to, tried in order; none answers SERVFAIL.
	Upstreams []string
	// TTL of cluster records in seconds [DefaultTTL].
	TTL    uint32
	Clock  clock.Clock  // [clock.Real]; times the forward cache
	Logger *slog.Logger // [discard]
}

// Server answers DNS queries. Create it with New, feed it with Apply, and
// serve with Serve or as a miekg/dns Handler. Safe for concurrent use.
type Server struct {
	domain    string
	ttl       uint32
	upstreams []string
	clk       clock.Clock
	log       *slog.Logger
	zone      atomic.Pointer[zone]
	soa       *mdns.SOA
	client    *mdns.Client

	mu    sync.Mutex
	cache map[cacheKey]cacheEntry
}

type cacheKey struct {
	name  string
	qtype uint16
}

type cacheEntry struct {
	msg     *mdns.Msg
	expires time.Time
}

var _ proxy.Sink = (*Server)(nil)

// New returns a Server with an empty zone.
func New(cfg Config) (*Server, error) {
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	domain := mdns.Fqdn(strings.ToLower(cfg.Domain))
	if _, ok := mdns.IsDomainName(domain); !ok {
		return nil, fmt.Errorf("dns: cluster domain %q is not a domain name", cfg.Domain)
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	var ups []string
	for _, u := range cfg.Upstreams {
		if ap, err := netip.ParseAddrPort(u); err == nil {
			ups = append(ups, ap.String())
			continue
		}
		a, err := netip.ParseAddr(u)
		if err != nil {
			return nil, fmt.Errorf("dns: upstream %q: want ip or ip:port", u)
		}
		ups = append(ups, netip.AddrPortFrom(a, 53).String())
	}
	s := &Server{
		domain: domain, ttl: cfg.TTL, upstreams: ups, clk: clock.Or(cfg.Clock), log: cfg.Logger,
		client: &mdns.Client{Net: "udp", Timeout: upstreamTimeout}, cache: map[cacheKey]cacheEntry{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.soa = &mdns.SOA{Hdr: hdr(domain, mdns.TypeSOA, negativeTTL), Ns: "ns.dns." + domain, Mbox: "hostmaster." + domain,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: negativeTTL}
	s.zone.Store(buildZone(nil, domain, cfg.TTL))
	return s, nil
}

// Apply replaces the cluster records with those of snap (proxy.Sink).
func (s *Server) Apply(snap *proxy.Snapshot) error {
	s.zone.Store(buildZone(snap, s.domain, s.ttl))
	return nil
}

// Serve answers on pc (UDP) and ln (TCP), either may be nil, until ctx
// ends; it then shuts both down and returns nil, or the first serving
// error.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	var servers []*mdns.Server
	if pc != nil {
		servers = append(servers, &mdns.Server{PacketConn: pc, Handler: s})
	}
	if ln != nil {
		servers = append(servers, &mdns.Server{Listener: ln, Handler: s})
	}
	errc := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errc <- srv.ActivateAndServe() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, srv := range servers {
		if serr := srv.Shutdown(); serr != nil && err == nil && ctx.Err() == nil {
			err = serr
		}
	}
	if err != nil {
		return fmt.Errorf("dns: %w", err)
	}
	return nil
}

// ServeDNS answers one query (mdns.Handler).
func (s *Server) ServeDNS(w mdns.ResponseWriter, r *mdns.Msg) {
	m := s.Answer(context.Background(), r)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("dns: write answer", "err", err)
	}
}

// Answer builds the reply to r: from memory for the cluster domain and
// known reverse names, else forwarded.
func (s *Server) Answer(ctx context.Context, r *mdns.Msg) *mdns.Msg {
	m := new(mdns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if len(r.Question) != 1 || r.Opcode != mdns.OpcodeQuery {
		m.Rcode = mdns.RcodeNotImplemented
		return m
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	z := s.zone.Load()
	switch {
	case mdns.IsSubDomain(s.domain, name):
		s.answerCluster(m, z, name, q.Qtype)
		return m
	case q.Qtype == mdns.TypePTR && len(z.ptr[name]) > 0:
		m.Authoritative = true
		for _, t := range z.ptr[name] {
			m.Answer = append(m.Answer, &mdns.PTR{Hdr: hdr(q.Name, mdns.TypePTR, s.ttl), Ptr: t})
		}
		return m
	}
	return s.forward(ctx, r)
}

func (s *Server) answerCluster(m *mdns.Msg, z *zone, name string, qtype uint16) {
	m.Authoritative = true
	owner := m.Question[0].Name
	if t, ok := z.cname[name]; ok {
		m.Answer = append(m.Answer, &mdns.CNAME{Hdr: hdr(owner, mdns.TypeCNAME, s.ttl), Target: t})
		return
	}
	if ip, ok := podAddr(name, s.domain); ok {
		if qtype == mdns.TypeA || qtype == mdns.TypeANY {
			m.Answer = append(m.Answer, &mdns.A{Hdr: hdr(owner, mdns.TypeA, s.ttl), A: ip.AsSlice()})
		} else {
			m.Ns = []mdns.RR{s.soa}
		}
		return
	}
	switch qtype {
	case mdns.TypeA, mdns.TypeANY:
		for _, ip := range z.a[name] {
			if ip.Is4() {
				m.Answer = append(m.Answer, &mdns.A{Hdr: hdr(owner, mdns.TypeA, s.ttl), A: ip.AsSlice()})
			}
		}
	case mdns.TypeAAAA:
		for _, ip := range z.a[name] {
			if ip.Is6() {
				m.Answer = append(m.Answer, &mdns.AAAA{Hdr: hdr(owner, mdns.TypeAAAA, s.ttl), AAAA: ip.AsSlice()})
			}
		}
	case mdns.TypeSRV:
		for _, rr := range z.srv[name] {
			c := *rr
			c.Hdr.Name = owner
			m.Answer = append(m.Answer, &c)
			for _, ip := range z.a[rr.Target] {
				if ip.Is4() {
					m.Extra = append(m.Extra, &mdns.A{Hdr: hdr(rr.Target, mdns.TypeA, s.ttl), A: ip.AsSlice()})
				}
			}
		}
	case mdns.TypeSOA:
		if name == s.domain {
			m.Answer = append(m.Answer, s.soa)
			return
		}
	}
	if len(m.Answer) == 0 {
		if !z.names[name] {
			m.Rcode = mdns.RcodeNameError
		}
		m.Ns = []mdns.RR{s.soa}
	}
}

// forward asks the upstreams (cached answers first).
func (s *Server) forward(ctx context.Context, r *mdns.Msg) *mdns.Msg {
	q := r.Question[0]
	k := cacheKey{strings.ToLower(q.Name), q.Qtype}
	now := s.clk.Now()
	s.mu.Lock()
	e, ok := s.cache[k]
	s.mu.Unlock()
	if ok && now.Before(e.expires) {
		m := e.msg.Copy()
		m.Id = r.Id
		return m
	}
	var errs []error
	for _, up := range s.upstreams {
		ctx, cancel := context.WithTimeout(ctx, upstreamTimeout)
		resp, _, err := s.client.ExchangeContext(ctx, r, up)
		if err == nil && resp.Truncated {
			tcp := &mdns.Client{Net: "tcp", Timeout: upstreamTimeout}
			resp, _, err = tcp.ExchangeContext(ctx, r, up)
		}
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.Rcode == mdns.RcodeSuccess || resp.Rcode == mdns.RcodeNameError {
			s.store(k, resp, now)
		}
		resp.Id = r.Id
		return resp
	}
	if len(errs) > 0 {
		s.log.Debug("dns: upstreams failed", "name", q.Name, "err", errors.Join(errs...))
	}
	m := new(mdns.Msg)
	m.SetRcode(r, mdns.RcodeServerFailure)
	m.RecursionAvailable = true
	return m
}

// store caches resp for its smallest TTL (negative answers: the SOA's
// minimum), at most maxCacheTTL.
func (s *Server) store(k cacheKey, resp *mdns.Msg, now time.Time) {
	ttl := maxCacheTTL
	rrs := resp.Answer
	if len(rrs) == 0 {
		rrs = resp.Ns
	}
	for _, rr := range rrs {
		t := time.Duration(rr.Header().Ttl) * time.Second
		if soa, ok := rr.(*mdns.SOA); ok && len(resp.Answer) == 0 {
			t = min(t, time.Duration(soa.Minttl)*time.Second)
		}
		ttl = min(ttl, t)
	}
	if ttl <= 0 || len(rrs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.cache) >= maxCacheEntries {
		for ck, ce := range s.cache {
			if !now.Before(ce.expires) || len(s.cache) >= maxCacheEntries {
				delete(s.cache, ck)
			}
			if len(s.cache) < maxCacheEntries*9/10 {
				break
			}
		}
	}
	s.cache[k] = cacheEntry{msg: resp.Copy(), expires: now.Add(ttl)}
}
