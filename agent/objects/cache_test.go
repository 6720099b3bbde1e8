package objects

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/skiffhq/skiff/agent/internal/agenttest"
	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/client"
	"github.com/skiffhq/skiff/internal/clock"
)

const ttl = time.Minute

func setup(t *testing.T) (*agenttest.Server, *Cache, *clock.Fake) {
	t.Helper()
	srv := agenttest.StartServer(t)
	ctx := context.Background()
	for _, o := range []api.Object{
		&api.Secret{ObjectMeta: api.ObjectMeta{Name: "s", Namespace: "default"}, Data: map[string][]byte{"k": []byte("v1")}},
		&api.ConfigMap{ObjectMeta: api.ObjectMeta{Name: "cm", Namespace: "default"}, Data: map[string]string{"k": "v1"}},
		&api.Secret{ObjectMeta: api.ObjectMeta{Name: "unused", Namespace: "default"}},
	} {
		if _, err := srv.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The node may read what its pods reference.
	p := agenttest.Pod("p", "n1")
	p.Spec.Volumes = []api.Volume{
		{Name: "s", VolumeSource: api.VolumeSource{Secret: &api.SecretVolumeSource{SecretName: "s"}}},
		{Name: "cm", VolumeSource: api.VolumeSource{ConfigMap: &api.ConfigMapVolumeSource{LocalObjectReference: api.LocalObjectReference{Name: "cm"}}}},
	}
	srv.CreatePod(p)
	clk := clock.NewFake(time.Unix(1e9, 0))
	c, err := New(Config{Client: srv.NodeClient("n1"), Clock: clk, TTL: ttl, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, clk
}

func secretValue(t *testing.T, c *Cache) string {
	t.Helper()
	s, err := c.GetSecret(context.Background(), "default", "s")
	if err != nil {
		t.Fatalf("GetSecret: %v", err)
	}
	return string(s.Data["k"])
}

func TestCacheTTLAndStaleCopyWhileServerDownRealServer(t *testing.T) {
	srv, c, clk := setup(t)
	ctx := context.Background()
	if v := secretValue(t, c); v != "v1" {
		t.Fatalf("secret = %q; want v1", v)
	}
	cm, err := c.GetConfigMap(ctx, "default", "cm")
	if err != nil || cm.Data["k"] != "v1" {
		t.Fatalf("GetConfigMap = %v, %v; want v1", cm, err)
	}

	// A change on the server shows only after the TTL.
	res, _ := api.LookupResource("secrets")
	obj, err := srv.Admin.Get(ctx, res, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	sec := obj.(*api.Secret)
	sec.Data["k"] = []byte("v2")
	if _, err := srv.Admin.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if v := secretValue(t, c); v != "v1" {
		t.Fatalf("secret within the TTL = %q; want the cached v1", v)
	}
	clk.Advance(ttl)
	if v := secretValue(t, c); v != "v2" {
		t.Fatalf("secret after the TTL = %q; want v2", v)
	}

	// Callers get copies.
	s1, _ := c.GetSecret(ctx, "default", "s")
	s1.Data["k"] = []byte("mutated")
	if v := secretValue(t, c); v != "v2" {
		t.Fatalf("secret after a caller mutated its copy = %q; want v2", v)
	}

	// Server down: the last good copy, however old.
	srv.Stop()
	clk.Advance(10 * ttl)
	if v := secretValue(t, c); v != "v2" {
		t.Fatalf("secret while the server is down = %q; want the stale v2", v)
	}
	if cm, err := c.GetConfigMap(ctx, "default", "cm"); err != nil || cm.Data["k"] != "v1" {
		t.Fatalf("configmap while the server is down = %v, %v; want the stale v1", cm, err)
	}
	if _, err := c.GetSecret(ctx, "default", "never-read"); err == nil {
		t.Fatal("GetSecret of an object never read, with the server down = nil error; want one")
	}

	// Server back, secret deleted: the copy is dropped.
	srv.Start()
	if err := srv.Admin.Delete(ctx, res, "default", "s", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(ttl)
	if _, err := c.GetSecret(ctx, "default", "s"); err == nil {
		t.Fatal("GetSecret of a deleted secret = nil error; want one")
	}
	srv.Stop()
	if _, err := c.GetSecret(ctx, "default", "s"); err == nil {
		t.Fatal("after a deletion the cache still served a copy with the server down")
	}
}

func TestCacheRefusedObjectIsAnErrorRealServer(t *testing.T) {
	_, c, _ := setup(t)
	if _, err := c.GetSecret(context.Background(), "default", "unused"); err == nil {
		t.Fatal("GetSecret of a secret no pod of the node uses = nil error; want the server's refusal")
	}
}
