package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// seedCluster creates one object or more of every kind, some with status,
// with creation times spread over the server's fake clock.
func seedCluster(h *cliHarness) {
	h.t.Helper()
	h.create(`apiVersion: v1
kind: Namespace
metadata: {name: edge}
---
apiVersion: v1
kind: Namespace
metadata: {name: empty}
---
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {node-role.kubernetes.io/control-plane: ""}
`)
	h.patchStatus("nodes", "", "node-1", `{"status":{
  "conditions":[{"type":"Ready","status":"True","reason":"AgentReady","message":"agent is posting ready status","lastHeartbeatTime":"`+h.ts(0)+`","lastTransitionTime":"`+h.ts(0)+`"}],
  "addresses":[{"type":"InternalIP","address":"192.168.1.10"},{"type":"Hostname","address":"node-1"}],
  "capacity":{"cpu":"4","memory":"8Gi","pods":"110"},
  "allocatable":{"cpu":"4","memory":"7Gi","pods":"110"},
  "nodeInfo":{"kernelVersion":"6.1.0-rpi","osImage":"Debian GNU/Linux 12 (bookworm)","containerRuntimeVersion":"containerd://1.7.24","kubeletVersion":"v0.1.0","operatingSystem":"linux","architecture":"arm64"}}}`)
	h.srvClk.Advance(2 * time.Minute)
	h.create(`apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {app: web}
spec:
  nodeName: node-1
  containers:
  - name: nginx
    image: nginx:1.27
    resources:
      requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: pending
  labels: {app: batch}
spec:
  containers:
  - name: job
    image: busybox:1.36
---
apiVersion: v1
kind: Pod
metadata:
  name: sensor
  namespace: edge
  labels: {app: sensor}
spec:
  nodeName: node-1
  containers:
  - name: reader
    image: registry.local/sensor:v3
`)
	h.patchStatus("pods", "default", "web-1", `{"status":{"phase":"Running","podIP":"10.42.0.5","hostIP":"192.168.1.10","startTime":"`+h.ts(2*time.Minute)+`",
  "conditions":[{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}],
  "containerStatuses":[{"name":"nginx","image":"nginx:1.27","ready":true,"restartCount":2,"state":{"running":{"startedAt":"`+h.ts(3*time.Minute)+`"}}}]}}`)
	h.patchStatus("pods", "edge", "sensor", `{"status":{"phase":"Pending","containerStatuses":[{"name":"reader","image":"registry.local/sensor:v3","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ContainerCreating"}}}]}}`)
	h.srvClk.Advance(3 * time.Minute)
	h.create(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: nginx, image: "nginx:1.27"}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logger, namespace: edge}
spec:
  selector: {matchLabels: {app: logger}}
  template:
    metadata: {labels: {app: logger}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: fluent, image: "fluent-bit:3.1"}]
---
apiVersion: v1
kind: Secret
metadata: {name: web-tls}
type: kubernetes.io/tls
data: {tls.crt: Y2VydA==, tls.key: a2V5}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-conf}
data: {nginx.conf: "worker_processes 1;", mime.types: "text/html html;"}
`)
	h.patchStatus("deployments", "default", "web", `{"status":{"replicas":2,"updatedReplicas":2,"readyReplicas":1,"availableReplicas":1}}`)
	h.srvClk.Advance(time.Minute)
	h.create(`apiVersion: v1
kind: Event
metadata: {name: web-1.scheduled}
involvedObject: {kind: Pod, namespace: default, name: web-1, apiVersion: v1}
reason: Scheduled
message: Successfully assigned default/web-1 to node-1
type: Normal
source: {component: default-scheduler}
firstTimestamp: "` + h.ts(2*time.Minute) + `"
lastTimestamp: "` + h.ts(2*time.Minute) + `"
count: 1
---
apiVersion: v1
kind: Event
metadata: {name: web-1.backoff}
involvedObject: {kind: Pod, namespace: default, name: web-1, apiVersion: v1}
reason: BackOff
message: Back-off restarting failed container nginx
type: Warning
source: {component: agent, host: node-1}
firstTimestamp: "` + h.ts(4*time.Minute) + `"
lastTimestamp: "` + h.ts(5*time.Minute) + `"
count: 3
---
apiVersion: v1
kind: Event
metadata: {name: web-1.pulled}
involvedObject: {kind: Pod, namespace: default, name: web-1, apiVersion: v1}
reason: Pulled
message: Container image "nginx:1.27" already present on machine
type: Normal
source: {component: agent, host: node-1}
firstTimestamp: "` + h.ts(3*time.Minute) + `"
lastTimestamp: "` + h.ts(3*time.Minute) + `"
count: 1
---
apiVersion: v1
kind: Event
metadata: {name: pending.failed}
involvedObject: {kind: Pod, namespace: default, name: pending, apiVersion: v1}
reason: FailedScheduling
message: "0/1 nodes are available: 1 Insufficient memory."
type: Warning
source: {component: default-scheduler}
firstTimestamp: "` + h.ts(2*time.Minute) + `"
lastTimestamp: "` + h.ts(6*time.Minute) + `"
count: 5
`)
}

func TestGetGolden(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	seedCluster(h)
	tests := []struct {
		golden string
		args   []string
	}{
		{"get-nodes", []string{"get", "nodes"}},
		{"get-nodes-wide", []string{"get", "no", "-o", "wide"}},
		{"get-pods", []string{"get", "pods"}},
		{"get-pods-wide", []string{"get", "po", "-o", "wide"}},
		{"get-pods-all-namespaces", []string{"get", "pods", "-A"}},
		{"get-pods-namespace", []string{"get", "pod", "-n", "edge"}},
		{"get-pods-label-selector", []string{"get", "pods", "-l", "app=web"}},
		{"get-pods-field-selector", []string{"get", "pods", "-A", "--field-selector", "spec.nodeName=node-1"}},
		{"get-pods-no-headers", []string{"get", "pods", "--no-headers"}},
		{"get-pods-name", []string{"get", "pods", "-o", "name"}},
		{"get-pod-json", []string{"get", "pod", "web-1", "-o", "json"}},
		{"get-pods-yaml", []string{"get", "pods", "-n", "edge", "-o", "yaml"}},
		{"get-deployments", []string{"get", "deployments"}},
		{"get-all", []string{"get", "all"}},
		{"get-kinds", []string{"get", "deploy,po", "-n", "edge"}},
		{"get-kinds-name", []string{"get", "ds,pods", "-o", "name"}},
		{"get-deployments-wide", []string{"get", "deploy", "-o", "wide"}},
		{"get-daemonsets", []string{"get", "ds", "-A"}},
		{"get-events", []string{"get", "events"}},
		{"get-secrets", []string{"get", "secrets"}},
		{"get-configmaps", []string{"get", "cm", "web-conf"}},
		{"get-namespaces", []string{"get", "ns"}},
		{"get-empty", []string{"get", "pods", "-n", "empty"}},
		{"get-empty-json", []string{"get", "pods", "-n", "empty", "-o", "json"}},
		{"get-empty-cluster", []string{"get", "deployments", "-A", "-l", "app=none"}},
		{"get-not-found", []string{"get", "pod", "web-1", "nope"}},
		{"get-unknown-kind", []string{"get", "widgets"}},
		{"get-bad-output", []string{"get", "pods", "-o", "xml"}},
		{"get-bad-selector", []string{"get", "pods", "-l", "a in (b"}},
		{"get-no-kind", []string{"get"}},
		{"get-bad-flag", []string{"get", "pods", "--bogus"}},
	}
	for _, tt := range tests {
		h.golden(tt.golden, h.run(tt.args...))
	}
}

func TestGetWatchStreamsNewRows(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	seedCluster(h)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, h.cliEnv(&out, &errb, ""), []string{"get", "pods", "-w"}) }()
	waitFor(t, "the initial table", func() bool { return strings.Contains(out.String(), "web-1") })
	h.srvClk.Advance(time.Minute)
	h.create(`apiVersion: v1
kind: Pod
metadata: {name: watched}
spec:
  containers: [{name: app, image: "busybox:1.36"}]
`)
	waitFor(t, "the new row", func() bool { return strings.Contains(out.String(), "watched") })
	h.patchStatus("pods", "default", "pending", `{"status":{"phase":"Failed"}}`)
	waitFor(t, "the changed row", func() bool { return strings.Contains(out.String(), "Failed") })
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("get -w exited %d after interrupt; want 0 (stderr %q)", code, errb.String())
	}
	// Rows after the table line up with it.
	want := `NAME      READY   STATUS    RESTARTS   AGE
pending   0/1     Pending   0          8m
web-1     1/1     Running   2          8m
watched   0/1     Pending   0          3m
pending   0/1     Failed    0          8m
`
	if got := out.String(); got != want {
		t.Errorf("get pods -w printed\n%s\nwant\n%s", got, want)
	}
}

func TestGetWatchEmptyListPrintsHeaderWithFirstRow(t *testing.T) {
	t.Parallel()
	h := startCLIHarness(t)
	h.create("apiVersion: v1\nkind: Namespace\nmetadata: {name: quiet}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, h.cliEnv(&out, &errb, ""), []string{"get", "cm", "-w", "-n", "quiet"}) }()
	waitFor(t, "the empty-list notice", func() bool { return strings.Contains(errb.String(), "No resources found in quiet namespace.") })
	h.create("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first, namespace: quiet}\ndata: {a: b}\n")
	waitFor(t, "the first row", func() bool { return strings.Contains(out.String(), "first") })
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("get -w exited %d; want 0", code)
	}
	if got, want := out.String(), "NAME    DATA   AGE\nfirst   1      10m\n"; got != want {
		t.Errorf("get cm -w printed %q; want %q", got, want)
	}
}
