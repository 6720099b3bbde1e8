package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestDescribeService(t *testing.T) {
	now := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	s := &api.Service{ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: api.NewTime(now)},
		Spec: api.ServiceSpec{Type: api.ServiceTypeNodePort, ClusterIP: "10.43.0.7", Selector: map[string]string{"app": "web"},
			Ports: []api.ServicePort{{Name: "http", Port: 80, TargetPort: api.FromString("http"), NodePort: 30080}}}}
	api.SetDefaults(s)
	var b bytes.Buffer
	if err := Describe(&b, s, nil, now); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Name:", "web", "Selector:", "app=web", "Type:", "NodePort", "IP:", "10.43.0.7",
		"Port:", "http  80/TCP", "TargetPort:", "NodePort:", "30080/TCP", "Session Affinity:", "None", "External Traffic Policy:", "Cluster"} {
		if !strings.Contains(out, want) {
			t.Errorf("Describe(service) lacks %q:\n%s", want, out)
		}
	}
}
