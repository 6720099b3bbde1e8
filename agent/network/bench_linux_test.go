package network

import (
	"context"
	"fmt"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

// BenchmarkPodNetworkSetUp measures SetUpPod (address, veth pair with
// the peer made in the pod's namespace, addresses, routes) on a host
// namespace the benchmark made; it reports p50 and p99 in ms. Making
// and deleting the pod namespaces is not timed.
func BenchmarkPodNetworkSetUp(b *testing.B) {
	requireTools(b)
	h := newHost(b, "node-a", "192.168.252.1", "10.244.1.0/24")
	h.m = newManager(b, h)
	if err := h.m.SetPodCIDR(h.cidr); err != nil {
		b.Fatal(err)
	}
	var durs []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ns := newNS(b, "pod")
		pod := testPod(fmt.Sprintf("p%d", i))
		b.StartTimer()
		start := time.Now()
		if _, err := h.m.SetUpPod(context.Background(), pod.UID, ns, pod); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		b.StopTimer()
		if err := h.m.TearDownPod(context.Background(), pod.UID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	pct := func(p float64) float64 {
		return float64(durs[int(p*float64(len(durs)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// throughput sends size bytes over TCP from namespace from to addr
// (served in namespace to) and returns MB/s.
func throughput(tb testing.TB, from, to, listenAddr, dialAddr string, size int64) float64 {
	tb.Helper()
	ln := listenIn(tb, to, "tcp4", listenAddr)
	done := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- -1
			return
		}
		n, _ := io.Copy(io.Discard, c)
		c.Close()
		done <- n
	}()
	c, err := dialIn(from, "tcp4", dialAddr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 256<<10)
	start := time.Now()
	var sent int64
	for sent < size {
		n, err := c.Write(buf)
		if err != nil {
			tb.Fatal(err)
		}
		sent += int64(n)
	}
	c.Close()
	if got := <-done; got != sent {
		tb.Fatalf("received %d bytes; sent %d", got, sent)
	}
	ln.Close()
	return float64(sent) / time.Since(start).Seconds() / 1e6
}

// BenchmarkPodThroughput measures TCP throughput pod to pod on one node
// and across the VXLAN overlay (two host namespaces joined by a veth),
// and host loopback in the same run; it reports MB/s and the ratios.
func BenchmarkPodThroughput(b *testing.B) {
	requireTools(b)
	a := newHost(b, "node-a", "192.168.253.1", "10.244.1.0/24")
	c := newHost(b, "node-b", "192.168.253.2", "10.244.2.0/24")
	joinHosts(b, a.ns, c.ns, a.ip, c.ip)
	nodes := []*api.Node{nodeObj(a.name, a.cidr, a.ip), nodeObj(c.name, c.cidr, c.ip)}
	for _, h := range []*testHost{a, c} {
		h.m = newManager(b, h)
		if err := h.m.SetNodes(nodes); err != nil {
			b.Fatal(err)
		}
	}
	p1, _ := setUp(b, a, testPod("src"))
	p2, ip2 := setUp(b, a, testPod("dst"))
	p3, ip3 := setUp(b, c, testPod("far"))
	const size = 512 << 20
	var los, locals, overlays []float64
	for i := 0; b.Loop(); i++ {
		// fresh ports each round: the last round's listeners are closed
		port := func(base int) string { return fmt.Sprint(base + i) }
		los = append(los, throughput(b, a.ns, a.ns, "127.0.0.1:"+port(7000), "127.0.0.1:"+port(7000), size))
		locals = append(locals, throughput(b, p1, p2, ":"+port(8000), ip2+":"+port(8000), size))
		overlays = append(overlays, throughput(b, p1, p3, ":"+port(9000), ip3+":"+port(9000), size))
	}
	// medians: the machine is shared, single rounds are noisy
	lo, local, overlay := median(los), median(locals), median(overlays)
	b.ReportMetric(lo, "loopback-MB/s")
	b.ReportMetric(local, "node-MB/s")
	b.ReportMetric(overlay, "vxlan-MB/s")
	b.ReportMetric(local/lo, "node/loopback")
	b.ReportMetric(overlay/lo, "vxlan/loopback")
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
