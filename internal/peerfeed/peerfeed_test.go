package peerfeed

import (
	"errors"
	"testing"

	"github.com/skiffhq/skiff/api"
)

// TestSetHashIgnoresOrder: two sets built in different orders, one
// through a replaced and a deleted peer, hash alike; a set differing in
// one field does not.
func TestSetHashIgnoresOrder(t *testing.T) {
	a, b := Peer{Name: "a", PodCIDR: "10.42.0.0/24", IP: "192.168.0.1"}, Peer{Name: "b", PodCIDR: "10.42.1.0/24"}
	var s1, s2, s3 Set
	s1.Put(a)
	s1.Put(b)
	s2.Put(Peer{Name: "c"})
	s2.Put(b)
	s2.Put(Peer{Name: "a"})
	s2.Put(a)
	s2.Delete("c")
	if s1.Hash() != s2.Hash() || s1.Len() != 2 || s2.Len() != 2 {
		t.Fatalf("hashes %s and %s (sizes %d, %d); want equal", s1.Hash(), s2.Hash(), s1.Len(), s2.Len())
	}
	s3.Put(a)
	s3.Put(Peer{Name: "b", PodCIDR: "10.42.1.0/24", Deleting: true})
	if s3.Hash() == s1.Hash() {
		t.Fatal("a set with b deleting hashes like one without")
	}
	if s1.Put(a) || s1.Delete("zz") {
		t.Fatal("putting the same peer or deleting a missing one reported a change")
	}
}

// TestApply: a full batch replaces, a delta upserts and deletes, and a
// batch whose hash is not the result's is ErrHash.
func TestApply(t *testing.T) {
	var server, agent Set
	server.Put(Peer{Name: "a", PodCIDR: "10.42.0.0/24"})
	server.Put(Peer{Name: "b"})
	agent.Put(Peer{Name: "stale"})
	if err := agent.Apply(Batch{Full: true, Peers: server.Sorted(), Hash: server.Hash()}); err != nil || agent.Len() != 2 {
		t.Fatalf("full batch: %v, %d peers", err, agent.Len())
	}
	server.Delete("a")
	server.Put(Peer{Name: "c", IP: "192.168.0.3"})
	if err := agent.Apply(Batch{Peers: []Peer{{Name: "c", IP: "192.168.0.3"}}, Deleted: []string{"a"}, Hash: server.Hash()}); err != nil {
		t.Fatal(err)
	}
	if _, ok := agent.Get("a"); ok || agent.Len() != 2 {
		t.Fatalf("after the delta the agent holds %v", agent.Sorted())
	}
	if err := agent.Apply(Batch{Peers: []Peer{{Name: "d"}}, Hash: server.Hash()}); !errors.Is(err, ErrHash) {
		t.Fatalf("a batch the server's hash does not match: %v; want ErrHash", err)
	}
	if err := agent.Apply(Batch{Peers: []Peer{{}}, Hash: "0"}); err == nil {
		t.Fatal("a peer without a name was applied")
	}
}

// TestOf: a Node's Peer is its podCIDR, its first IPv4 InternalIP and
// whether it is being deleted.
func TestOf(t *testing.T) {
	n := &api.Node{ObjectMeta: api.ObjectMeta{Name: "n", DeletionTimestamp: &api.Time{}}}
	n.Spec.PodCIDR = "10.42.7.0/24"
	n.Status.Addresses = []api.NodeAddress{{Type: api.NodeHostName, Address: "n"}, {Type: api.NodeInternalIP, Address: "fd00::1"},
		{Type: api.NodeInternalIP, Address: "192.168.0.7"}, {Type: api.NodeInternalIP, Address: "192.168.0.8"}}
	p := Of(n)
	if p != (Peer{Name: "n", PodCIDR: "10.42.7.0/24", IP: "192.168.0.7", Deleting: true}) {
		t.Fatalf("Of = %+v", p)
	}
}
