package usage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/storage"
)

// fleetNodeJSON and fleetPodJSON are stored objects as a fleet's agents
// write them: a registered node with its conditions, and a Deployment's
// replica, bound and Running.
const fleetNodeJSON = `{"apiVersion":"v1","kind":"Node","metadata":{"name":"NAME","uid":"3f1c7e2a-0000-4000-8000-000000000001","resourceVersion":"1",
"labels":{"kubernetes.io/hostname":"NAME","kubernetes.io/os":"linux","kubernetes.io/arch":"arm64","topology.kubernetes.io/zone":"zone-1"}},
"spec":{"podCIDR":"10.64.1.0/24","podCIDRs":["10.64.1.0/24"]},
"status":{"capacity":{"cpu":"4","memory":"4Gi","pods":"110","ephemeral-storage":"30Gi"},"allocatable":{"cpu":"4","memory":"3900Mi","pods":"110","ephemeral-storage":"28Gi"},
"conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2026-12-02T03:04:05Z","lastTransitionTime":"2026-12-02T03:04:05Z","reason":"AgentReady","message":"skiff agent is posting ready status"},
{"type":"MemoryPressure","status":"False","lastHeartbeatTime":"2026-12-02T03:04:05Z","lastTransitionTime":"2026-12-02T03:04:05Z","reason":"AgentHasSufficientMemory"},
{"type":"DiskPressure","status":"False","lastHeartbeatTime":"2026-12-02T03:04:05Z","lastTransitionTime":"2026-12-02T03:04:05Z","reason":"AgentHasNoDiskPressure"},
{"type":"PIDPressure","status":"False","lastHeartbeatTime":"2026-12-02T03:04:05Z","lastTransitionTime":"2026-12-02T03:04:05Z","reason":"AgentHasSufficientPID"}],
"addresses":[{"type":"InternalIP","address":"10.0.0.42"},{"type":"Hostname","address":"NAME"}],
"nodeInfo":{"machineID":"m","bootID":"b","kernelVersion":"6.1.0","osImage":"Debian GNU/Linux 12","containerRuntimeVersion":"containerd://1.6.20","kubeletVersion":"v1.31.0-skiff","kubeProxyVersion":"","operatingSystem":"linux","architecture":"arm64"}}}`

const fleetPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"NAME","namespace":"default","uid":"3f1c7e2a-0000-4000-8000-000000000001",
"resourceVersion":"123456","labels":{"app":"fleet-web","pod-template-hash":"6d9f7c"},
"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"fleet-web-6d9f7c","uid":"u","controller":true}]},
"spec":{"nodeName":"NODE","containers":[{"name":"web","image":"busybox:stable","command":["httpd","-f"],
"resources":{"requests":{"cpu":"10m","memory":"16Mi"},"limits":{"memory":"32Mi"}}}],
"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"fleet-web"}}}]},
"status":{"phase":"Running","hostIP":"10.0.0.42","podIP":"10.0.0.42","podIPs":[{"ip":"10.0.0.42"}],"startTime":"2026-12-02T03:04:05Z","qosClass":"Burstable",
"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-12-02T03:04:05Z"}],
"containerStatuses":[{"name":"web","image":"busybox:stable","imageID":"fleetsim://busybox","containerID":"fleetsim://x/web","ready":true,"started":true,
"state":{"running":{"startedAt":"2026-12-02T03:04:05Z"}}}]}}`

// BenchmarkSample is one sample of a fleet of 10,000 nodes, one pod on
// each, read from their stored JSON (the store's read left out). The
// "whole objects" case decodes every Node and Pod, as the sample did
// before it read only its figures, for comparison.
func BenchmarkSample(b *testing.B) {
	const n = 10000
	st := &rawStore{}
	for i := range n {
		node := fmt.Sprintf("node-%05d", i)
		st.nodes = append(st.nodes, []byte(strings.ReplaceAll(fleetNodeJSON, "NAME", node)))
		st.pods = append(st.pods, []byte(strings.NewReplacer("NAME", fmt.Sprintf("web-%05d", i), "NODE", node).Replace(fleetPodJSON)))
	}
	b.Run("figures", func(b *testing.B) {
		r, err := New(Config{Store: st, Clock: clock.NewFake(t0)})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := r.SampleNow(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole objects", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, raw := range st.nodes {
				if err := api.UnmarshalOwn(raw, &api.Node{}); err != nil {
					b.Fatal(err)
				}
			}
			for _, raw := range st.pods {
				if err := api.UnmarshalOwn(raw, &api.Pod{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkSampleStore is one sample of 10,000 nodes and pods read from a
// real SQLite store; "store List" is the store's decoded List of both,
// what a sample read before.
func BenchmarkSampleStore(b *testing.B) {
	const n = 10000
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Options{Path: filepath.Join(b.TempDir(), "state.db"), CompactInterval: -1, CheckpointInterval: -1, ReserveBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for lo := 0; lo < n; lo += 1000 {
		var objs []api.Object
		for i := lo; i < lo+1000; i++ {
			node := fmt.Sprintf("node-%05d", i)
			no, po := &api.Node{}, &api.Pod{}
			if err := api.UnmarshalOwn([]byte(strings.ReplaceAll(fleetNodeJSON, "NAME", node)), no); err != nil {
				b.Fatal(err)
			}
			if err := api.UnmarshalOwn([]byte(strings.NewReplacer("NAME", fmt.Sprintf("web-%05d", i), "NODE", node).Replace(fleetPodJSON)), po); err != nil {
				b.Fatal(err)
			}
			no.ResourceVersion, po.ResourceVersion = "", ""
			objs = append(objs, no, po)
		}
		for _, err := range st.CreateBatch(ctx, objs) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sample", func(b *testing.B) {
		r, err := New(Config{Store: st, Clock: clock.NewFake(t0)})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := r.SampleNow(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("store List", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, res := range []string{"nodes", "pods"} {
				if _, _, err := st.List(ctx, res, storage.ListOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
