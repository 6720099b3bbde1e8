package dns

import (
	"context"
	"net"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/skiffhq/skiff/agent/proxy"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
)

func ptr[T any](v T) *T { return &v }

func testSnapshot() *proxy.Snapshot {
	web := &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "web"}, Spec: api.ServiceSpec{
		ClusterIP: "10.43.0.20", Ports: []api.ServicePort{{Name: "http", Port: 80, Protocol: api.ProtocolTCP}}}}
	db := &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: api.ServiceSpec{ClusterIP: "None"}}
	ext := &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: api.ServiceSpec{Type: api.ServiceTypeExternalName, ExternalName: "example.org"}}
	yes, no := true, false
	slice := &api.EndpointSlice{
		ObjectMeta:  api.ObjectMeta{Namespace: "shop", Name: "db-1", Labels: map[string]string{api.LabelServiceName: "db"}},
		AddressType: api.AddressTypeIPv4,
		Ports:       []api.EndpointPort{{Name: ptr("pg"), Port: ptr(int32(5432)), Protocol: ptr(api.ProtocolTCP)}},
		Endpoints: []api.Endpoint{
			{Addresses: []string{"10.42.1.5"}, Hostname: ptr("db-0"), Conditions: api.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"10.42.2.6"}, Conditions: api.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"10.42.2.7"}, Conditions: api.EndpointConditions{Ready: &no}},
		},
	}
	return &proxy.Snapshot{Services: []*api.Service{web, db, ext}, Slices: []*api.EndpointSlice{slice}}
}

func newTestServer(t testing.TB, upstreams ...string) *Server {
	t.Helper()
	s, err := New(Config{Upstreams: upstreams, Clock: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(testSnapshot()); err != nil {
		t.Fatal(err)
	}
	return s
}

func ask(s *Server, name string, qtype uint16) *mdns.Msg {
	q := new(mdns.Msg)
	q.SetQuestion(name, qtype)
	return s.Answer(context.Background(), q)
}

func rrStrings(rrs []mdns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch r := rr.(type) {
		case *mdns.A:
			out = append(out, r.A.String())
		case *mdns.SRV:
			out = append(out, r.Target+":"+fmtInt(int(r.Port)))
		case *mdns.PTR:
			out = append(out, r.Ptr)
		case *mdns.CNAME:
			out = append(out, "cname "+r.Target)
		case *mdns.SOA:
			out = append(out, "soa")
		}
	}
	sort.Strings(out)
	return out
}

func fmtInt(v int) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

func TestClusterRecords(t *testing.T) {
	s := newTestServer(t)
	tests := []struct {
		name   string
		qtype  uint16
		rcode  int
		answer []string
		ns     []string
	}{
		{"web.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.43.0.20"}, nil},
		{"WEB.Default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.43.0.20"}, nil},
		{"web.default.svc.cluster.local.", mdns.TypeAAAA, mdns.RcodeSuccess, nil, []string{"soa"}},
		{"_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeSuccess, []string{"web.default.svc.cluster.local.:80"}, nil},
		{"db.shop.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.1.5", "10.42.2.6"}, nil},
		{"db-0.db.shop.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.1.5"}, nil},
		{"10-42-2-6.db.shop.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.2.6"}, nil},
		{"_pg._tcp.db.shop.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeSuccess, []string{"10-42-2-6.db.shop.svc.cluster.local.:5432", "db-0.db.shop.svc.cluster.local.:5432"}, nil},
		{"ext.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"cname example.org."}, nil},
		{"20.0.43.10.in-addr.arpa.", mdns.TypePTR, mdns.RcodeSuccess, []string{"web.default.svc.cluster.local."}, nil},
		{"5.1.42.10.in-addr.arpa.", mdns.TypePTR, mdns.RcodeSuccess, []string{"db-0.db.shop.svc.cluster.local."}, nil},
		{"10-42-3-4.default.pod.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.3.4"}, nil},
		// empty non-terminals exist; unknown names do not
		{"default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, nil, []string{"soa"}},
		{"nope.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, []string{"soa"}},
		{"web.nope.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, []string{"soa"}},
		{"10-42-2-7.db.shop.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, []string{"soa"}},
	}
	for _, tc := range tests {
		m := ask(s, tc.name, tc.qtype)
		if m.Rcode != tc.rcode || !slices.Equal(rrStrings(m.Answer), tc.answer) || !slices.Equal(rrStrings(m.Ns), tc.ns) || !m.Authoritative {
			t.Errorf("%s %s = rcode %s answer %v ns %v aa %v; want %s %v %v, authoritative",
				tc.name, mdns.TypeToString[tc.qtype], mdns.RcodeToString[m.Rcode], rrStrings(m.Answer), rrStrings(m.Ns), m.Authoritative,
				mdns.RcodeToString[tc.rcode], tc.answer, tc.ns)
		}
	}
	if m := ask(s, "nope.default.svc.cluster.local.", mdns.TypeA); len(m.Ns) != 1 || m.Ns[0].(*mdns.SOA).Minttl != negativeTTL {
		t.Errorf("NXDOMAIN authority = %v; want the SOA with minimum TTL %d for negative caching", m.Ns, negativeTTL)
	}
	// A Service going away takes its names with it.
	if err := s.Apply(&proxy.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	if m := ask(s, "web.default.svc.cluster.local.", mdns.TypeA); m.Rcode != mdns.RcodeNameError {
		t.Errorf("after the Service went, rcode = %s; want NXDOMAIN", mdns.RcodeToString[m.Rcode])
	}
}

// upstream runs a DNS server on loopback that the test owns; it answers
// example.org A with 192.0.2.1 and everything else NXDOMAIN, counting
// queries.
func upstream(t *testing.T) (addr string, queries *atomic.Int32) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	queries = &atomic.Int32{}
	srv := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		queries.Add(1)
		m := new(mdns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "example.org." {
			m.Answer = append(m.Answer, &mdns.A{Hdr: hdr("example.org.", mdns.TypeA, 60), A: net.ParseIP("192.0.2.1")})
		} else {
			m.Rcode = mdns.RcodeNameError
			m.Ns = append(m.Ns, &mdns.SOA{Hdr: hdr("org.", mdns.TypeSOA, 900), Ns: "a.org.", Mbox: "b.org.", Minttl: 30})
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String(), queries
}

func TestForwardAndCache(t *testing.T) {
	addr, queries := upstream(t)
	s := newTestServer(t, addr)
	fc := s.clk.(*clock.Fake)
	for range 3 {
		if m := ask(s, "example.org.", mdns.TypeA); m.Rcode != mdns.RcodeSuccess || !slices.Equal(rrStrings(m.Answer), []string{"192.0.2.1"}) {
			t.Fatalf("example.org A = %v %v; want 192.0.2.1", mdns.RcodeToString[m.Rcode], m.Answer)
		}
	}
	if n := queries.Load(); n != 1 {
		t.Errorf("upstream queries for three asks = %d; want 1 (cached)", n)
	}
	if m := ask(s, "missing.org.", mdns.TypeA); m.Rcode != mdns.RcodeNameError {
		t.Errorf("missing.org = %s; want NXDOMAIN forwarded", mdns.RcodeToString[m.Rcode])
	}
	ask(s, "missing.org.", mdns.TypeA)
	if n := queries.Load(); n != 2 {
		t.Errorf("upstream queries = %d; want 2 (the NXDOMAIN cached too)", n)
	}
	fc.Advance(31 * time.Second) // past the negative TTL, within the positive one
	ask(s, "missing.org.", mdns.TypeA)
	ask(s, "example.org.", mdns.TypeA)
	if n := queries.Load(); n != 3 {
		t.Errorf("upstream queries after 31s = %d; want 3 (only the negative answer expired)", n)
	}
	// No upstream: SERVFAIL, cluster names still answered.
	lone := newTestServer(t)
	if m := ask(lone, "example.com.", mdns.TypeA); m.Rcode != mdns.RcodeServerFailure {
		t.Errorf("without upstreams example.com = %s; want SERVFAIL", mdns.RcodeToString[m.Rcode])
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{Domain: "bad..domain"}, {Upstreams: []string{"resolver.example"}}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error", c)
		}
	}
}

// BenchmarkClusterQueryUDP measures cluster-name queries over UDP on
// loopback against a zone of 1,000 Services; it reports p50 and p99.
func BenchmarkClusterQueryUDP(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	snap := &proxy.Snapshot{}
	for i := range 1000 {
		snap.Services = append(snap.Services, &api.Service{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "svc" + fmtInt(i)},
			Spec: api.ServiceSpec{ClusterIP: "10.43." + fmtInt(i/250) + "." + fmtInt(i%250+1)}})
	}
	if err := s.Apply(snap); err != nil {
		b.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, pc, nil) }()
	defer func() { cancel(); <-done }()
	conn, err := mdns.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var durs []time.Duration
	q := new(mdns.Msg)
	i := 0
	for b.Loop() {
		q.SetQuestion("svc"+fmtInt(i%1000)+".default.svc.cluster.local.", mdns.TypeA)
		i++
		start := time.Now()
		if err := conn.WriteMsg(q); err != nil {
			b.Fatal(err)
		}
		m, err := conn.ReadMsg()
		if err != nil || len(m.Answer) != 1 {
			b.Fatalf("query: %v %v", m, err)
		}
		durs = append(durs, time.Since(start))
	}
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-us")
}

// FuzzAnswer feeds arbitrary wire messages to the server (no upstreams):
// whatever unpacks must get an answer without a panic.
func FuzzAnswer(f *testing.F) {
	for _, name := range []string{"web.default.svc.cluster.local.", "_pg._tcp.db.shop.svc.cluster.local.", "5.1.42.10.in-addr.arpa.", "1-2-3-4.x.pod.cluster.local."} {
		q := new(mdns.Msg)
		q.SetQuestion(name, mdns.TypeSRV)
		if b, err := q.Pack(); err == nil {
			f.Add(b)
		}
	}
	s := newTestServer(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m mdns.Msg
		if m.Unpack(data) != nil {
			return
		}
		if a := s.Answer(context.Background(), &m); a == nil {
			t.Fatal("Answer returned nil")
		}
	})
}
