package testenv

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
)

func TestBusyboxImageDeterministic(t *testing.T) {
	bin, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("read /bin/busybox (install busybox-static): %v", err)
	}
	a, err := busyboxLayer(bin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := busyboxLayer(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of the busybox layer differ")
	}
	la, _ := ociLayout(a, BusyboxRef)
	lb, _ := ociLayout(b, BusyboxRef)
	if !bytes.Equal(la, lb) {
		t.Error("two builds of the OCI layout differ")
	}
}

// TestIntegrationContainerdImport starts a real daemon and imports the
// busybox image into it.
func TestIntegrationContainerdImport(t *testing.T) {
	socket := StartContainerd(t)
	tarPath, ref := BusyboxImage(t)
	c, err := client.New(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), "testenv"), 30*time.Second)
	defer cancel()
	f, err := os.Open(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs, err := c.Import(ctx, f)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if len(imgs) != 1 || imgs[0].Name != ref {
		t.Fatalf("Import = %+v; want one image named %s", imgs, ref)
	}
	img := client.NewImage(c, imgs[0])
	if err := img.Unpack(ctx, Snapshotter()); err != nil {
		t.Fatalf("Unpack: %v", err)
	}
}

func TestBound(t *testing.T) {
	for env, want := range map[string]time.Duration{"": time.Second, "3": 3 * time.Second, "1": time.Second, "x": time.Second, "100": time.Second} {
		t.Setenv(ScaleEnv, env)
		if got := Bound(time.Second); got != want {
			t.Errorf("Bound(1s) with %s=%q = %v; want %v", ScaleEnv, env, got, want)
		}
	}
}
