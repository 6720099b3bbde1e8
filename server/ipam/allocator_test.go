package ipam

import (
	"errors"
	"fmt"
	"testing"
)

func TestAllocatorAllocateLowestFreeAndReuse(t *testing.T) {
	a, err := NewAllocator("10.42.0.0/22")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"10.42.0.0/24", "10.42.1.0/24", "10.42.2.0/24", "10.42.3.0/24"} {
		node := string(rune('a' + i))
		p, err := a.Allocate(node)
		if err != nil || p.String() != want {
			t.Fatalf("Allocate(%q) = %v, %v; want %s", node, p, err, want)
		}
	}
	if p, err := a.Allocate("b"); err != nil || p.String() != "10.42.1.0/24" {
		t.Fatalf("Allocate(%q) again = %v, %v; want its own 10.42.1.0/24", "b", p, err)
	}
	if _, err := a.Allocate("e"); !errors.Is(err, ErrFull) {
		t.Fatalf("Allocate(%q) on a full range = %v; want ErrFull", "e", err)
	}
	a.Release("b")
	if p, err := a.Allocate("e"); err != nil || p.String() != "10.42.1.0/24" {
		t.Fatalf("Allocate(%q) after release = %v, %v; want 10.42.1.0/24", "e", p, err)
	}
}

func TestAllocatorOccupy(t *testing.T) {
	a, err := NewAllocator("10.42.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Occupy("a", "10.42.7.0/24"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ node, cidr string }{
		{"b", "10.42.7.0/24"},   // taken
		{"b", "10.43.0.0/24"},   // outside
		{"b", "10.42.8.0/25"},   // not a /24
		{"b", "10.42.8.1/24"},   // not masked
		{"b", "not a cidr"},     // garbage
		{"b", "fd00::/64"},      // wrong family
		{"b", "10.42.0.0/16"},   // too large
		{"b", ""},               // empty
		{"b", "10.42.300.0/24"}, // bad octet
	} {
		if err := a.Occupy(tc.node, tc.cidr); !errors.Is(err, ErrConflict) {
			t.Errorf("Occupy(%q, %q) = %v; want ErrConflict", tc.node, tc.cidr, err)
		}
	}
	if p, _ := a.Allocate("b"); p.String() != "10.42.0.0/24" {
		t.Fatalf("Allocate(b) = %v; want 10.42.0.0/24", p)
	}
	// moving a node frees its old subnet
	if err := a.Occupy("a", "10.42.9.0/24"); err != nil {
		t.Fatal(err)
	}
	if err := a.Occupy("c", "10.42.7.0/24"); err != nil {
		t.Fatalf("Occupy(c, a's old subnet) = %v; want nil", err)
	}
}

func TestNewAllocatorRejectsBadClusterCIDR(t *testing.T) {
	for _, c := range []string{"", "x", "10.0.0.0/25", "fd00::/48"} {
		if _, err := NewAllocator(c); err == nil {
			t.Errorf("NewAllocator(%q) = nil error; want one", c)
		}
	}
}

// TestAllocatorFreeAndLowestAfterRelease fills a range, frees subnets
// out of order and checks Allocate still takes the lowest free one and
// Free counts them.
func TestAllocatorFreeAndLowestAfterRelease(t *testing.T) {
	a, err := NewAllocator("10.40.0.0/14") // 1 024 subnets
	if err != nil {
		t.Fatal(err)
	}
	if a.Free() != 1024 {
		t.Fatalf("Free() = %d on an empty /14; want 1024", a.Free())
	}
	if err := a.Occupy("held", "10.40.5.0/24"); err != nil {
		t.Fatal(err)
	}
	for i := range 1023 {
		if _, err := a.Allocate(fmt.Sprintf("n%d", i)); err != nil {
			t.Fatalf("Allocate #%d: %v", i, err)
		}
	}
	if p, _ := a.Get("n5"); p.String() != "10.40.6.0/24" {
		t.Fatalf("n5 holds %v; want 10.40.6.0/24 (10.40.5.0/24 was occupied)", p)
	}
	if _, err := a.Allocate("extra"); !errors.Is(err, ErrFull) || a.Free() != 0 {
		t.Fatalf("Allocate on a full /14 = %v, Free() = %d; want ErrFull, 0", err, a.Free())
	}
	a.Release("n1000") // the 1 002nd subnet (index 1 001): 10.43.233.0/24
	a.Release("n3")    // 10.40.3.0/24
	a.Release("held")  // 10.40.5.0/24
	if a.Free() != 3 {
		t.Fatalf("Free() = %d after three releases; want 3", a.Free())
	}
	for _, want := range []string{"10.40.3.0/24", "10.40.5.0/24", "10.43.233.0/24"} {
		if p, err := a.Allocate("again-" + want); err != nil || p.String() != want {
			t.Fatalf("Allocate = %v, %v; want %s", p, err, want)
		}
	}
	if _, err := a.Allocate("extra"); !errors.Is(err, ErrFull) {
		t.Fatalf("Allocate on a full range again = %v; want ErrFull", err)
	}
}
