package peerfeed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/netip"
	"sort"
	"strconv"

	"github.com/skiffhq/skiff/api"
)

// Path is the feed's endpoint.
const Path = "/api/v1/skiff/peers"

// Peer is one Node's place in the pod network.
type Peer struct {
	Name    string `json:"name"`
	PodCIDR string `json:"podCIDR,omitempty"`
	IP      string `json:"ip,omitempty"` // the Node's first IPv4 InternalIP
	// Deleting: the Node has a deletionTimestamp.
	Deleting bool `json:"deleting,omitempty"`
}

// Batch is one line of the stream.
type Batch struct {
	// Revision is the store revision the set is at after this batch;
	// an agent resumes from it (Since).
	Revision int64 `json:"revision"`
	// Hash is Set.Hash of the whole set after this batch.
	Hash string `json:"hash"`
	// Full: Peers is the whole set, replacing what the agent had.
	Full    bool     `json:"full,omitempty"`
	Peers   []Peer   `json:"peers,omitempty"`   // added or changed (Full: all)
	Deleted []string `json:"deleted,omitempty"` // names of Nodes gone
}

// Of is n's Peer.
func Of(n *api.Node) Peer {
	p := Peer{Name: n.Name, PodCIDR: n.Spec.PodCIDR, Deleting: n.DeletionTimestamp != nil}
	for _, a := range n.Status.Addresses {
		if a.Type != api.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() {
			p.IP = ip.String()
			break
		}
	}
	return p
}

func (p Peer) sum() uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%t", p.Name, p.PodCIDR, p.IP, p.Deleting)
	return h.Sum64()
}

// Set is a set of Peers by name with a hash that does not depend on
// order: the sum of each Peer's FNV-64a. The zero value is empty; it is
// not safe for concurrent use.
type Set struct {
	peers map[string]Peer
	sum   uint64
}

// Len is how many Peers the set holds.
func (s *Set) Len() int { return len(s.peers) }

// Get returns the Peer named name.
func (s *Set) Get(name string) (Peer, bool) {
	p, ok := s.peers[name]
	return p, ok
}

// Put adds or replaces p; it reports whether the set changed.
func (s *Set) Put(p Peer) bool {
	if s.peers == nil {
		s.peers = map[string]Peer{}
	}
	if old, ok := s.peers[p.Name]; ok {
		if old == p {
			return false
		}
		s.sum -= old.sum()
	}
	s.peers[p.Name] = p
	s.sum += p.sum()
	return true
}

// Delete removes the Peer named name; it reports whether there was one.
func (s *Set) Delete(name string) bool {
	old, ok := s.peers[name]
	if !ok {
		return false
	}
	delete(s.peers, name)
	s.sum -= old.sum()
	return true
}

// Hash is the set's hash, as a Batch carries it.
func (s *Set) Hash() string { return strconv.FormatUint(s.sum, 16) }

// Sorted returns the Peers in name order.
func (s *Set) Sorted() []Peer {
	out := make([]Peer, 0, len(s.peers))
	for _, p := range s.peers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Peers returns the Peers in no order.
func (s *Set) Peers() []Peer {
	out := make([]Peer, 0, len(s.peers))
	for _, p := range s.peers {
		out = append(out, p)
	}
	return out
}

// ErrHash is a batch whose Hash is not the set's after applying it.
var ErrHash = errors.New("peer feed: the set's hash does not match the server's")

// Apply applies b (replacing the set when b.Full); it returns ErrHash,
// with the set as applied, when the result is not what the server has.
func (s *Set) Apply(b Batch) error {
	if b.Full {
		*s = Set{}
	}
	for _, p := range b.Peers {
		if p.Name == "" {
			return errors.New("peer feed: a peer without a name")
		}
		s.Put(p)
	}
	for _, name := range b.Deleted {
		s.Delete(name)
	}
	if s.Hash() != b.Hash {
		return ErrHash
	}
	return nil
}

// MaxLine bounds one batch's line: the whole set of 100,000 nodes is
// about 8 MB.
const MaxLine = 64 << 20

// Reader reads a stream's batches. It holds a 4 KiB buffer between
// batches, never the largest line it has read (a json.Decoder keeps its
// buffer grown to the whole set's line, 800 KB at 10,000 nodes, for the
// stream's life).
type Reader struct {
	br *bufio.Reader
}

// NewReader reads batches from r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReader(r)} }

// Next returns the next batch.
func (r *Reader) Next() (Batch, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLine {
			return Batch{}, fmt.Errorf("peer feed: a batch longer than %d bytes", MaxLine)
		}
		if err == nil && line == nil {
			line = chunk // the whole line is in the buffer
			break
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return Batch{}, err
		}
	}
	var b Batch
	if err := json.Unmarshal(line, &b); err != nil {
		return Batch{}, fmt.Errorf("peer feed: %w", err)
	}
	return b, nil
}
