package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkPodStatusUpdate measures an agent's status write of a pod it
// started, as every replica of a placement has one: a PUT of the whole
// pod to its status subresource through the handler (no TLS), with a
// status that differs from the stored one, so each is a write.
func BenchmarkPodStatusUpdate(b *testing.B) {
	h := newHarness(b)
	const pods = 500
	for i := range pods {
		code, body := h.do("POST", "/api/v1/namespaces/default/pods", "application/json", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod",`+
			`"metadata":{"name":"web-%d","labels":{"app":"fleet-web","pod-template-hash":"5d8f7c9b4"},`+
			`"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d8f7c9b4","uid":"0b6f4d7e-5d7e-4b1c-9a52-3f0c2b1d9e11","controller":true,"blockOwnerDeletion":true}]},`+
			`"spec":{"nodeName":"node-%05d","topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"fleet-web"}}}],`+
			`"containers":[{"name":"web","image":"nginx:1.27","resources":{"requests":{"cpu":"10m","memory":"16Mi"}}}]}}`, i, i))
		if code != http.StatusCreated {
			b.Fatalf("create: %d %s", code, body)
		}
	}
	// The pods as the agents have them, each with its uid and the rest.
	stored := make([][]byte, pods)
	for i := range pods {
		code, body := h.do("GET", fmt.Sprintf("/api/v1/namespaces/default/pods/web-%d", i), "", "")
		if code != http.StatusOK {
			b.Fatalf("get: %d %s", code, body)
		}
		stored[i] = body
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := i % pods
		b.StopTimer() // the agent's side
		at := h.clock.Now().Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		body := fmt.Sprintf(`%s,"status":{"phase":"Running","hostIP":"10.1.2.3","podIP":"10.1.2.3","podIPs":[{"ip":"10.1.2.3"}],"startTime":%q,"qosClass":"Burstable",`+
			`"conditions":[{"type":"PodScheduled","status":"True","lastTransitionTime":%[2]q},{"type":"Initialized","status":"True","lastTransitionTime":%[2]q},`+
			`{"type":"ContainersReady","status":"True","lastTransitionTime":%[2]q},{"type":"Ready","status":"True","lastTransitionTime":%[2]q}],`+
			`"containerStatuses":[{"name":"web","image":"nginx:1.27","imageID":"fleetsim://nginx:1.27","containerID":"fleetsim://x/web","ready":true,"started":true,"restartCount":0,`+
			`"state":{"running":{"startedAt":%[2]q}}}]}}`, withoutStatus(b, stored[p]), at)
		b.StartTimer()
		code, out := h.do("PUT", fmt.Sprintf("/api/v1/namespaces/default/pods/web-%d/status", p), "application/json", body)
		if code != http.StatusOK {
			b.Fatalf("status: %d %s", code, out)
		}
		stored[p] = out // the agent's next write names this resourceVersion
	}
}

// withoutStatus is a pod's JSON without its status and closing brace,
// so that a new status can be appended.
func withoutStatus(b *testing.B, pod []byte) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(pod, &m); err != nil {
		b.Fatal(err)
	}
	delete(m, "status")
	out, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	return string(out[:len(out)-1])
}
