package printers

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func mustResource(t *testing.T, name string) api.ResourceInfo {
	t.Helper()
	r, ok := api.LookupResource(name)
	if !ok {
		t.Fatalf("LookupResource(%q) = false", name)
	}
	return r
}

func TestPrintTableGolden(t *testing.T) {
	pods := objects(fixturePods())
	podsAllNS := append([]api.Object{systemPod()}, pods...)
	tests := []struct {
		golden   string
		resource string
		objs     []api.Object
		opts     TableOptions
	}{
		{"pods", "pods", pods, TableOptions{}},
		{"pods-wide", "pods", pods, TableOptions{Wide: true}},
		{"pods-all-namespaces", "pods", podsAllNS, TableOptions{AllNamespaces: true}},
		{"pods-all-namespaces-wide", "pods", podsAllNS, TableOptions{AllNamespaces: true, Wide: true}},
		{"pods-no-headers", "pods", pods, TableOptions{NoHeaders: true}},
		{"nodes", "nodes", objects(fixtureNodes()), TableOptions{}},
		{"nodes-wide", "nodes", objects(fixtureNodes()), TableOptions{Wide: true}},
		{"nodes-all-namespaces", "nodes", objects(fixtureNodes()), TableOptions{AllNamespaces: true}},
		{"deployments", "deployments", objects(fixtureDeployments()), TableOptions{}},
		{"deployments-wide", "deployments", objects(fixtureDeployments()), TableOptions{Wide: true}},
		{"daemonsets", "daemonsets", objects(fixtureDaemonSets()), TableOptions{}},
		{"daemonsets-wide-all-namespaces", "daemonsets", objects(fixtureDaemonSets()), TableOptions{Wide: true, AllNamespaces: true}},
		{"events", "events", objects(fixtureEvents()), TableOptions{}},
		{"events-wide", "events", objects(fixtureEvents()), TableOptions{Wide: true}},
		{"events-all-namespaces", "events", objects(fixtureEvents()), TableOptions{AllNamespaces: true}},
		{"secrets", "secrets", objects(fixtureSecrets()), TableOptions{}},
		{"configmaps", "configmaps", objects(fixtureConfigMaps()), TableOptions{}},
		{"namespaces", "namespaces", objects(fixtureNamespaces()), TableOptions{}},
		{"namespaces-no-headers", "namespaces", objects(fixtureNamespaces()), TableOptions{NoHeaders: true}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			tc.opts.Now = now
			var b bytes.Buffer
			if err := PrintTable(&b, mustResource(t, tc.resource), tc.objs, tc.opts); err != nil {
				t.Fatalf("PrintTable() = %v", err)
			}
			checkGolden(t, "table-"+tc.golden, b.Bytes())
		})
	}
}

func TestPrintTableEveryResource(t *testing.T) {
	for _, res := range api.Resources() {
		obj := res.New()
		obj.GetObjectMeta().Name = "x"
		var b bytes.Buffer
		if err := PrintTable(&b, res, []api.Object{obj}, TableOptions{Now: now}); err != nil {
			t.Errorf("PrintTable(%s) = %v; every resource needs a table layout", res.Resource, err)
		}
	}
}

func TestPrintTableErrors(t *testing.T) {
	var b bytes.Buffer
	pods := mustResource(t, "pods")
	if err := PrintTable(&b, pods, []api.Object{fixtureNodes()[0]}, TableOptions{Now: now}); err == nil {
		t.Error("PrintTable(pods, a Node) = nil; want a type error")
	}
	if err := PrintTable(&b, pods, []api.Object{nil}, TableOptions{Now: now}); err == nil {
		t.Error("PrintTable(pods, nil) = nil; want an error")
	}
	if err := PrintTable(&b, api.ResourceInfo{Kind: "Widget"}, []api.Object{fixturePods()[0]}, TableOptions{Now: now}); err == nil {
		t.Error("PrintTable(Widget) = nil; want an error")
	}
	if b.Len() != 0 {
		t.Errorf("failed PrintTable calls wrote %q; want nothing", b.String())
	}
	if err := PrintTable(&b, pods, nil, TableOptions{Now: now}); err != nil || b.Len() != 0 {
		t.Errorf("PrintTable(no objects) = %v, wrote %q; want nil and nothing", err, b.String())
	}
}

// TestTableLayout pins kubectl's tabwriter geometry: columns are the
// widest cell plus 3 spaces, at least 6 wide, the last unpadded.
func TestTableLayout(t *testing.T) {
	ns := &api.Namespace{ObjectMeta: meta("", "a", time.Minute), Status: api.NamespaceStatus{Phase: "Active"}}
	var b bytes.Buffer
	if err := PrintTable(&b, mustResource(t, "namespaces"), []api.Object{ns}, TableOptions{Now: now}); err != nil {
		t.Fatal(err)
	}
	want := "NAME   STATUS   AGE\na      Active   60s\n"
	if b.String() != want {
		t.Errorf("PrintTable(namespace a) = %q; want %q", b.String(), want)
	}
}

func TestWatchPrinter(t *testing.T) {
	var b bytes.Buffer
	p, err := NewWatchPrinter(&b, mustResource(t, "pods"), TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := fixturePods()
	short := &api.Pod{ObjectMeta: meta("default", "a", time.Minute), Spec: api.PodSpec{Containers: []api.Container{{Name: "c"}}},
		Status: api.PodStatus{Phase: api.PodPending}}
	for _, obj := range []*api.Pod{short, pods[0], short} {
		if err := p.Print(obj, now); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		"NAME   READY   STATUS    RESTARTS   AGE",
		"a      0/1     Pending   0          60s",
		"web-7d4b9c-x2k8p   2/2     Running   1 (5m ago)   2d3h",
		"a                  0/1     Pending   0            60s",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("WatchPrinter output =\n%s\nwant\n%s", b.String(), want)
	}
	if _, err := NewWatchPrinter(&b, api.ResourceInfo{Kind: "Widget"}, TableOptions{}); err == nil {
		t.Error("NewWatchPrinter(Widget) = nil error; want one")
	}
	if err := p.Print(fixtureNodes()[0], now); err == nil {
		t.Error("WatchPrinter(pods).Print(node) = nil; want a type error")
	}
}

func TestCellString(t *testing.T) {
	tests := []struct {
		cell any
		want string
	}{
		{"plain", "plain"},
		{"first line\nsecond", "first line..."},
		{"a\rb", "a..."},
		{"", ""},
		{int64(42), "42"},
	}
	for _, tc := range tests {
		if got := cellString(tc.cell); got != tc.want {
			t.Errorf("cellString(%#v) = %q; want %q", tc.cell, got, tc.want)
		}
	}
}
