package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/internal/clock"
)

const staticYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`

func startFileSource(t *testing.T, dir string) (*signalSink, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1e9, 0))
	sink := newSignalSink(t, SourceFile)
	src, err := NewFileSource(FileSourceConfig{Dir: dir, NodeName: "n1", Clock: clk, Period: 5 * time.Second, Logger: quiet}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	sink.waitCall(t, "set") // the first scan runs at once
	return sink, clk
}

// rescan runs one more scan and waits until it is merged.
func rescan(t *testing.T, sink *signalSink, clk *clock.Fake) {
	t.Helper()
	clk.BlockUntil(1)
	clk.Advance(5 * time.Second)
	sink.waitCall(t, "set")
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceLifecycle(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "web.yaml"), staticYAML)
	write(t, filepath.Join(dir, "README.txt"), "not a manifest")
	sink, clk := startFileSource(t, dir)
	if !sink.SeenAllSources() {
		t.Fatal("SeenAllSources() = false after the first scan")
	}

	add := expectUpdate(t, sink.Merger, "ADD file web-n1")
	p := add.Pods[0]
	if p.Namespace != "default" || p.Spec.NodeName != "n1" || !IsStaticPod(p) || StaticPodHash(p) == "" || p.UID == "" {
		t.Fatalf("static pod = ns %q node %q annotations %v uid %q; want default, n1, source file, a hash and a UID", p.Namespace, p.Spec.NodeName, p.Annotations, p.UID)
	}
	if p.Spec.RestartPolicy != "Always" || p.Spec.Containers[0].ImagePullPolicy == "" {
		t.Fatalf("static pod not defaulted: restartPolicy %q pullPolicy %q", p.Spec.RestartPolicy, p.Spec.Containers[0].ImagePullPolicy)
	}

	// Unchanged: nothing.
	rescan(t, sink, clk)
	if got := drain(sink.Merger); len(got) != 0 {
		t.Fatalf("rescan of an unchanged dir sent %q; want nothing", got)
	}

	// A bad file is ignored; the good one stays.
	write(t, filepath.Join(dir, "bad.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec: {containers: [{name: c, imag: x}]}\n")
	write(t, filepath.Join(dir, "invalid.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"Bad_Name"},"spec":{"containers":[{"name":"c","image":"x"}]}}`)
	write(t, filepath.Join(dir, "two.yml"), staticYAML+"---\n"+staticYAML)
	write(t, filepath.Join(dir, "svc.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
	write(t, filepath.Join(dir, "empty.yaml"), "# nothing\n")
	rescan(t, sink, clk)
	if got := drain(sink.Merger); len(got) != 0 {
		t.Fatalf("bad files sent %q; want nothing", got)
	}

	// An edit is a new pod: the old one is removed, the new one added.
	write(t, filepath.Join(dir, "web.yaml"), strings.Replace(staticYAML, "nginx:1.27", "nginx:1.28", 1))
	rescan(t, sink, clk)
	got := describe(nextUpdate(t, sink.Merger), nextUpdate(t, sink.Merger))
	if strings.Join(got, "; ") != "REMOVE file web-n1; ADD file web-n1" {
		t.Fatalf("after an edit: %q; want REMOVE then ADD of web-n1", got)
	}
	pods := sink.Pods(SourceFile)
	if len(pods) != 1 || pods[0].UID == p.UID || pods[0].Spec.Containers[0].Image != "nginx:1.28" {
		t.Fatalf("after an edit the file source holds %d pods (uid changed: %v); want the new one", len(pods), len(pods) == 1 && pods[0].UID != p.UID)
	}

	// Deleting the file removes the pod.
	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	rescan(t, sink, clk)
	expectUpdate(t, sink.Merger, "REMOVE file web-n1")
}

func TestFileSourceMissingDirIsEmpty(t *testing.T) {
	sink, _ := startFileSource(t, filepath.Join(t.TempDir(), "absent"))
	if !sink.SeenAllSources() {
		t.Fatal("a missing directory did not count as an (empty) state")
	}
	if got := drain(sink.Merger); len(got) != 0 {
		t.Fatalf("missing dir sent %q", got)
	}
}

func TestStaticPodFromFile(t *testing.T) {
	a, err := StaticPodFromFile("web.yaml", []byte(staticYAML), "n1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := StaticPodFromFile("web.yaml", []byte(staticYAML), "n2")
	if err != nil {
		t.Fatal(err)
	}
	c, err := StaticPodFromFile("web.yaml", []byte(staticYAML), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if a.UID != c.UID || a.UID == b.UID {
		t.Fatalf("UIDs: same file and node %q vs %q (want equal), other node %q (want different)", a.UID, c.UID, b.UID)
	}
	if a.Name != "web-n1" || b.Name != "web-n2" {
		t.Fatalf("names %q, %q; want web-n1, web-n2", a.Name, b.Name)
	}
	bad := []struct{ name, data string }{
		{"empty", ""},
		{"no name", "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: x}]}\n"},
		{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containerz: []}\n"},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"},
		{"wrong version", "apiVersion: v2\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: x}]}\n"},
		{"invalid", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: []}\n"},
		{"garbage", "\x00\x01{{{"},
	}
	for _, tt := range bad {
		if p, err := StaticPodFromFile("f.yaml", []byte(tt.data), "n1"); err == nil {
			t.Errorf("StaticPodFromFile(%s) = %s; want an error", tt.name, p.Name)
		}
	}
}
