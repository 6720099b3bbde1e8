package peerfeed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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

// TestReader: batches across the reader's 4 KiB buffer come back whole;
// a cut line is io.ErrUnexpectedEOF and a clean end io.EOF.
func TestReader(t *testing.T) {
	var big Set
	for i := range 300 {
		big.Put(Peer{Name: fmt.Sprintf("node-%04d", i), PodCIDR: fmt.Sprintf("10.42.%d.0/24", i%250), IP: "192.168.0.1"})
	}
	first, _ := json.Marshal(Batch{Revision: 7, Hash: big.Hash(), Full: true, Peers: big.Sorted()})
	second, _ := json.Marshal(Batch{Revision: 9, Hash: "0", Deleted: []string{"node-0001"}})
	if len(first) < 3*4096 {
		t.Fatalf("the whole set's line is %d bytes; want it longer than the buffer", len(first))
	}
	stream := string(first) + "\n" + string(second) + "\n"
	rd := NewReader(strings.NewReader(stream))
	var got Set
	b, err := rd.Next()
	if err != nil || got.Apply(b) != nil || got.Len() != 300 {
		t.Fatalf("first batch: %v, %d peers", err, got.Len())
	}
	if b, err := rd.Next(); err != nil || b.Revision != 9 || len(b.Deleted) != 1 {
		t.Fatalf("second batch %+v, %v", b, err)
	}
	if _, err := rd.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last batch: %v; want io.EOF", err)
	}
	rd = NewReader(strings.NewReader(stream[:len(first)-10]))
	if _, err := rd.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut line: %v; want io.ErrUnexpectedEOF", err)
	}
}

// FuzzReader: no input makes the reader or Apply panic.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"revision":1,"hash":"0","full":true}` + "\n"))
	f.Add([]byte(`{"revision":2,"hash":"x","peers":[{"name":"a","podCIDR":"10.42.0.0/24"}],"deleted":["b"]}` + "\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := NewReader(bytes.NewReader(data))
		var s Set
		for range 100 {
			b, err := rd.Next()
			if err != nil {
				return
			}
			s.Apply(b)
		}
	})
}
