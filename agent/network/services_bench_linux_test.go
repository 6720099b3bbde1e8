package network

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/proxy"
)

// benchState is n Services (TCP, with node ports) of k endpoints each.
func benchState(n, k int) *proxy.State {
	st := &proxy.State{}
	for i := range n {
		p := proxy.Port{
			Name:      fmt.Sprintf("bench/svc-%d:http", i),
			ClusterIP: netip.AddrFrom4([4]byte{10, 96, byte((i + 1) >> 8), byte(i + 1)}), Port: 80, Proto: proxy.ProtoTCP,
			NodePort: uint16(30000 + i),
		}
		for j := range k {
			p.Endpoints = append(p.Endpoints, proxy.Endpoint{IP: netip.AddrFrom4([4]byte{10, 244, byte(j + 1), byte(i%250 + 2)}), Port: uint16(8000 + i%1000)})
		}
		st.Ports = append(st.Ports, p)
	}
	return st
}

// BenchmarkServiceProxySync measures SyncServices for 1,000 Services of
// 10 endpoints each in a namespace the benchmark made: "full-ms" is the
// first sync of a process (every chain and map element written in one
// transaction), "one-change-ms" a later sync where one Service lost an
// endpoint.
func BenchmarkServiceProxySync(b *testing.B) {
	requireTools(b)
	const services, endpoints = 1000, 10
	st := benchState(services, endpoints)
	changed := benchState(services, endpoints)
	changed.Ports[500].Endpoints = changed.Ports[500].Endpoints[1:]
	var full, one time.Duration
	rounds := 0
	for b.Loop() {
		b.StopTimer()
		h := newHost(b, "bench", "192.168.248.1", "10.244.1.0/24")
		h.m = newManager(b, h)
		if err := h.m.SetPodCIDR(h.cidr); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := h.m.SyncServices(st); err != nil {
			b.Fatal(err)
		}
		full += time.Since(start)
		start = time.Now()
		if err := h.m.SyncServices(changed); err != nil {
			b.Fatal(err)
		}
		one += time.Since(start)
		rounds++
	}
	b.ReportMetric(float64(full.Microseconds())/float64(rounds)/1000, "full-ms")
	b.ReportMetric(float64(one.Microseconds())/float64(rounds)/1000, "one-change-ms")
}

// BenchmarkServiceProxyConnect measures one TCP connection (connect, one
// byte each way, close) from a pod to a pod on the same node, through a
// cluster IP (with 1,000 Services programmed) and to the pod IP directly,
// in namespaces the benchmark made. It reports microseconds per
// connection for both.
func BenchmarkServiceProxyConnect(b *testing.B) {
	requireTools(b)
	h := newHost(b, "bench", "192.168.247.1", "10.244.1.0/24")
	h.m = newManager(b, h)
	if err := h.m.SetPodCIDR(h.cidr); err != nil {
		b.Fatal(err)
	}
	srvNS, srvIP := setUp(b, h, testPod("srv"))
	cliNS, _ := setUp(b, h, testPod("cli"))
	ln := listenIn(b, srvNS, "tcp4", ":8080")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 1)
				if _, err := c.Read(buf); err == nil {
					_, _ = c.Write(buf)
				}
				c.Close()
			}()
		}
	}()
	st := benchState(1000, 10)
	st.Ports[0].Endpoints = []proxy.Endpoint{{IP: netip.MustParseAddr(srvIP), Port: 8080}}
	if err := h.m.SyncServices(st); err != nil {
		b.Fatal(err)
	}
	cip := st.Ports[0].ClusterIP.String() + ":80"
	dial := func(addr string) time.Duration {
		start := time.Now()
		c, err := dialIn(cliNS, "tcp4", addr, 3*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		buf := []byte{1}
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Read(buf); err != nil {
			b.Fatal(err)
		}
		c.Close()
		return time.Since(start)
	}
	var viaSvc, direct time.Duration
	n := 0
	for b.Loop() {
		viaSvc += dial(cip)
		direct += dial(srvIP + ":8080")
		n++
	}
	b.ReportMetric(float64(viaSvc.Microseconds())/float64(n), "clusterIP-us/conn")
	b.ReportMetric(float64(direct.Microseconds())/float64(n), "podIP-us/conn")
}
