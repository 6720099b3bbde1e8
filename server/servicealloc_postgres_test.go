package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/clock"
	"github.com/skiffhq/skiff/internal/pgtest"
)

// post sends an admin POST from any goroutine (harness.do may Fatal).
func (h *harness) post(path, token, body string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, h.info.URL+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func nodePortService(name, clusterIP string) string {
	ip := ""
	if clusterIP != "" {
		ip = `"clusterIP":"` + clusterIP + `",`
	}
	return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `"},"spec":{` + ip +
		`"type":"NodePort","selector":{"app":"x"},"ports":[{"port":80,"protocol":"TCP"}]}}`
}

// checkDistinctServiceAddresses lists the Services through h and fails
// the test when two hold one cluster IP or one node port. It returns how
// many there are.
func checkDistinctServiceAddresses(t *testing.T, h *harness, token string) int {
	t.Helper()
	var list struct{ Items []api.Service }
	if err := json.Unmarshal(h.mustDo("GET", "/api/v1/services", token, "", 200), &list); err != nil {
		t.Fatal(err)
	}
	ips, ports := map[string]string{}, map[int32]string{}
	for _, s := range list.Items {
		who := s.Namespace + "/" + s.Name
		if s.Spec.ClusterIP != "" {
			if prev, dup := ips[s.Spec.ClusterIP]; dup {
				t.Errorf("cluster IP %s held by both %s and %s", s.Spec.ClusterIP, prev, who)
			}
			ips[s.Spec.ClusterIP] = who
		}
		for _, p := range s.Spec.Ports {
			if p.NodePort == 0 {
				continue
			}
			if prev, dup := ports[p.NodePort]; dup {
				t.Errorf("node port %d held by both %s and %s", p.NodePort, prev, who)
			}
			ports[p.NodePort] = who
		}
	}
	return len(list.Items)
}

// TestPostgresTwoServersServiceAddressesAreUnique runs two servers on one
// PostgreSQL database with a small service CIDR (/27: 30 addresses, two
// taken by kubernetes and kube-dns) and creates NodePort Services through
// both at once: every create succeeds and no two Services share a
// cluster IP or a node port, though each server's allocator knows only
// its own. Deleting through one server frees addresses the other then
// hands out (the range is full without them); an address the client asks
// for that the other server gave out is refused with 422; after a
// restart the same holds.
func TestPostgresTwoServersServiceAddressesAreUnique(t *testing.T) {
	cluster := pgtest.Start(t, pgtest.Options{})
	ds := cluster.Database(t)
	keyFile := filepath.Join(t.TempDir(), "encryption.key") // the servers' shared key
	configure := func(c *Config) {
		c.Datastore, c.EncryptionKeyFile, c.Clock = ds, keyFile, clock.Real{}
		c.ServiceCIDR, c.NodePortRange = "10.43.0.0/27", "30000-30029"
	}
	a := startHarnessWith(t, "", nil, configure)
	dirB := t.TempDir()
	b := startHarnessWith(t, dirB, nil, configure)
	token := a.adminToken()

	create := func(servers []*harness, prefix string, n int) {
		t.Helper()
		var wg sync.WaitGroup
		for g := range 4 {
			h := servers[g%len(servers)]
			wg.Go(func() {
				for i := g; i < n; i += 4 {
					name := fmt.Sprintf("%s-%d", prefix, i)
					code, body, err := h.post("/api/v1/namespaces/default/services", token, nodePortService(name, ""))
					if err != nil || code != 201 {
						t.Errorf("create service %s = %d %s, %v; want 201", name, code, body, err)
					}
				}
			})
		}
		wg.Wait()
	}
	create([]*harness{a, b}, "s", 24)
	if n := checkDistinctServiceAddresses(t, a, token); n != 26 {
		t.Fatalf("%d services; want 24 plus kubernetes and kube-dns", n)
	}

	// Delete 8 through A (created on either), then fill the range
	// through B, which must reuse what A freed.
	for i := range 8 {
		a.mustDo("DELETE", fmt.Sprintf("/api/v1/namespaces/default/services/s-%d", i), token, "", 200)
	}
	create([]*harness{b}, "t", 12) // 16 + 12 + 2 = 30: the range is full
	if n := checkDistinctServiceAddresses(t, b, token); n != 30 {
		t.Fatalf("%d services; want a full range of 30", n)
	}
	code, body := b.do("POST", "/api/v1/namespaces/default/services", token, nodePortService("over", ""))
	if code != 422 {
		t.Fatalf("create on a full range = %d %s; want 422", code, body)
	}

	// A client asking for an address the other server gave out.
	var held api.Service
	if err := json.Unmarshal(b.mustDo("GET", "/api/v1/namespaces/default/services/t-0", token, "", 200), &held); err != nil {
		t.Fatal(err)
	}
	a.mustDo("DELETE", "/api/v1/namespaces/default/services/s-8", token, "", 200)
	code, body = a.do("POST", "/api/v1/namespaces/default/services", token, nodePortService("dup", held.Spec.ClusterIP))
	if code != 422 || !strings.Contains(string(body), "already allocated") {
		t.Fatalf("create with %s, held through the other server = %d %s; want 422 already allocated", held.Spec.ClusterIP, code, body)
	}

	// Restart B: it rebuilds from the store and still refuses the
	// duplicate, and hands out the one free address.
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	b = startHarnessWith(t, dirB, nil, configure)
	code, body = b.do("POST", "/api/v1/namespaces/default/services", token, nodePortService("dup", held.Spec.ClusterIP))
	if code != 422 {
		t.Fatalf("create with a held address after a restart = %d %s; want 422", code, body)
	}
	b.mustDo("POST", "/api/v1/namespaces/default/services", token, nodePortService("last", ""), 201)
	if n := checkDistinctServiceAddresses(t, b, token); n != 30 {
		t.Fatalf("%d services; want 30", n)
	}
}
