package config

import "testing"

// FuzzStaticPodFromFile: no manifest file panics the agent; an accepted
// one is a pod bound to the node, with a UID and the static annotation.
func FuzzStaticPodFromFile(f *testing.F) {
	f.Add("web.yaml", []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: c\n    image: busybox\n"))
	f.Add("x.json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"kube"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	f.Add("bad.yaml", []byte("kind: Deployment\n"))
	f.Add("empty.yaml", []byte(""))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		pod, err := StaticPodFromFile(name, data, "edge-1")
		if err != nil {
			if pod != nil {
				t.Fatalf("pod and error both returned: %v", err)
			}
			return
		}
		if pod.Spec.NodeName != "edge-1" || pod.UID == "" || !IsStaticPod(pod) {
			t.Fatalf("accepted pod %s/%s: node %q uid %q static %v", pod.Namespace, pod.Name, pod.Spec.NodeName, pod.UID, IsStaticPod(pod))
		}
	})
}
