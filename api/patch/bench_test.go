package patch_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/patch"
)

// benchPod is a Pod with a few containers, env vars and volumes.
func benchPod(b *testing.B) []byte {
	b.Helper()
	p := api.Pod{ObjectMeta: api.ObjectMeta{Name: "p", Labels: map[string]string{"app": "web"}, Finalizers: []string{"a", "b"}}}
	for _, n := range []string{"app", "sidecar", "proxy"} {
		c := api.Container{Name: n, Image: n + ":1"}
		for _, e := range []string{"A", "B", "C", "D"} {
			c.Env = append(c.Env, api.EnvVar{Name: e, Value: "v"})
		}
		c.VolumeMounts = []api.VolumeMount{{Name: "data", MountPath: "/data"}}
		p.Spec.Containers = append(p.Spec.Containers, c)
	}
	p.Spec.Volumes = []api.Volume{{Name: "data", VolumeSource: api.VolumeSource{EmptyDir: &api.EmptyDirVolumeSource{}}}}
	doc, err := json.Marshal(&p)
	if err != nil {
		b.Fatal(err)
	}
	return doc
}

// BenchmarkStrategic measures a kubectl-apply-shaped patch of a Pod.
func BenchmarkStrategic(b *testing.B) {
	doc := benchPod(b)
	p := []byte(`{"metadata":{"labels":{"tier":"front"}},"spec":{"$setElementOrder/containers":[{"name":"app"},{"name":"sidecar"},{"name":"proxy"}],"containers":[{"name":"proxy","image":"proxy:2","$setElementOrder/env":[{"name":"A"},{"name":"B"},{"name":"C"},{"name":"D"}],"env":[{"name":"C","value":"w"}]}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := patch.Strategic(doc, p, podType); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMerge is the JSON merge patch of the same change, for scale.
func BenchmarkMerge(b *testing.B) {
	doc := benchPod(b)
	p := []byte(`{"metadata":{"labels":{"tier":"front"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := patch.Merge(doc, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrategicLargeLists merges 20,000 finalizers and 20,000
// containers into as many existing ones: list merging must stay close to
// linear so a large request body cannot pin a CPU.
func BenchmarkStrategicLargeLists(b *testing.B) {
	var doc, p bytes.Buffer
	doc.WriteString(`{"metadata":{"finalizers":[`)
	p.WriteString(`{"metadata":{"finalizers":[`)
	for i := range 20000 {
		if i > 0 {
			doc.WriteByte(',')
			p.WriteByte(',')
		}
		fmt.Fprintf(&doc, `"f%d"`, i)
		fmt.Fprintf(&p, `"g%d"`, i)
	}
	doc.WriteString(`]},"spec":{"containers":[`)
	p.WriteString(`]},"spec":{"containers":[`)
	for i := range 20000 {
		if i > 0 {
			doc.WriteByte(',')
			p.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"name":"c%d"}`, i)
		fmt.Fprintf(&p, `{"name":"c%d","image":"x"}`, 20000-i)
	}
	doc.WriteString(`]}}`)
	p.WriteString(`]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := patch.Strategic(doc.Bytes(), p.Bytes(), podType); err != nil {
			b.Fatal(err)
		}
	}
}
