package api

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// strictBoth decodes raw as r's kind through DecodeJSON and through
// decodeJSONStrict alone, and says whether the fast path decoded it.
func strictBoth(r ResourceInfo, raw []byte) (got Object, err error, want Object, werr error, fast bool) {
	got, want = r.New(), r.New()
	fast = decodeStrictFast(raw, r.New())
	err = DecodeJSON(raw, got)
	werr = decodeJSONStrict(raw, want)
	return
}

// sameStrict fails t unless DecodeJSON and decodeJSONStrict agree on raw:
// the same error, or the same object.
func sameStrict(t *testing.T, r ResourceInfo, raw []byte) (fast bool) {
	t.Helper()
	got, err, want, werr, fast := strictBoth(r, raw)
	if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
		t.Fatalf("%s: DecodeJSON error %v, decodeJSONStrict error %v: %q", r.Kind, err, werr, raw)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("%s: %q decodes to\n%s\ndecodeJSONStrict to\n%s", r.Kind, raw, g, w)
	}
	return fast
}

// TestDecodeJSONFastPathMatchesStrictForEveryKind: an object of every
// kind with every field set takes the fast path and decodes to what the
// three-pass strict decode gives, field for field.
func TestDecodeJSONFastPathMatchesStrictForEveryKind(t *testing.T) {
	for _, r := range Resources() {
		raw := fullObject(r, 3)
		if len(raw) > maxFastStrictBytes {
			raw = fullObject(r, 2) // one the fast path may take
		}
		if !sameStrict(t, r, raw) {
			err := decodeJSONStrict(raw, r.New())
			t.Errorf("%s: a full object (%d bytes) did not take the fast path (strict decode: %v)", r.Kind, len(raw), err)
		}
	}
}

// TestDecodeJSONFastPathMatchesStrictOnMutations runs the check over
// seeded random mutations of every kind's object: bytes replaced, names'
// case flipped (unknown fields to the strict decoder), spans repeated
// (duplicate names), as the object's own kind and as another.
func TestDecodeJSONFastPathMatchesStrictOnMutations(t *testing.T) {
	infos := Resources()
	seeds := fullObjects(infos, 2)
	rng := rand.New(rand.NewPCG(3, 4))
	mutations, fast, refused := 2000, 0, 0
	if testing.Short() {
		mutations = 300
	}
	for range mutations {
		k := rng.IntN(len(seeds))
		s := mutate(rng, seeds[k], rng.IntN(2) == 0)
		for _, r := range []ResourceInfo{infos[k], infos[rng.IntN(len(infos))]} {
			if sameStrict(t, r, s) {
				fast++
			} else if decodeJSONStrict(s, r.New()) != nil {
				refused++
			}
		}
	}
	if fast == 0 || refused == 0 {
		t.Fatalf("fast path %d, refused %d of %d decodes: the check compared too little", fast, refused, 2*mutations)
	}
	t.Logf("%d decodes took the fast path, %d were refused; all matched the strict decode", fast, refused)
}

// FuzzDecodeJSONFastPathMatchesStrict: DecodeJSON, with its fast path,
// gives what the three-pass strict decode gives: the same object or the
// same error.
func FuzzDecodeJSONFastPathMatchesStrict(f *testing.F) {
	addPodSeeds(f)
	f.Add([]byte(`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-01-02T03:04:05Z"}]},"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1500m"}}}]}}`))
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"replicas":"3"}}`))
	f.Add([]byte(`{"metadata":{"name":"a"}} {}`))
	f.Add([]byte(`null`))
	infos := Resources()
	pods, _ := LookupResource("pods")
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, r := range []ResourceInfo{pods, infos[len(raw)%len(infos)]} {
			sameStrict(t, r, raw)
		}
	})
}

// TestDecodeJSONFastPathLimits: what the fast path leaves to the strict
// decode: a body long enough to hold an over-long list, and a value that
// is not zero (the decoders merge into one differently).
func TestDecodeJSONFastPathLimits(t *testing.T) {
	long := []byte(`{"metadata":{"name":"a"},"spec":{"containers":[` + strings.Repeat(`{},`, MaxDecodeListItems) + `{}]}}`)
	if decodeStrictFast(long, &Pod{}) {
		t.Error("the fast path took a body longer than maxFastStrictBytes")
	}
	var de *DecodeError
	if err := DecodeJSON(long, &Pod{}); err == nil || !strings.Contains(err.Error(), "items") {
		t.Errorf("a list of %d containers = %v; want the strict decode's list limit", MaxDecodeListItems+1, err)
	} else if !asDecodeError(err, &de) {
		t.Errorf("a list too long = %T; want *DecodeError", err)
	}
	p := &Pod{Spec: PodSpec{NodeName: "kept"}}
	if decodeStrictFast([]byte(`{"metadata":{"name":"a"}}`), p) {
		t.Error("the fast path decoded into a non-zero value")
	}
	if err := DecodeJSON([]byte(`{"metadata":{"name":"a"}}`), p); err != nil || p.Spec.NodeName != "kept" || p.Name != "a" {
		t.Errorf("decode into a filled Pod = %v, %+v; want encoding/json's merge", err, p)
	}
	for _, body := range []string{`null`, ` `, `[]`, `"x"`} {
		if decodeStrictFast([]byte(body), &Pod{}) {
			t.Errorf("the fast path took %q", body)
		}
	}
}

func asDecodeError(err error, de **DecodeError) bool {
	d, ok := err.(*DecodeError)
	*de = d
	return ok
}

// BenchmarkDecodeJSONPod: a full Pod body (as an agent's status write
// sends) through DecodeJSON's fast path and through the strict decode
// alone.
func BenchmarkDecodeJSONPod(b *testing.B) {
	pod := &Pod{}
	n := 0
	fill(reflect.ValueOf(pod).Elem(), 2, &n)
	raw, _ := json.Marshal(pod)
	b.Logf("body %d bytes", len(raw))
	for _, bc := range []struct {
		name string
		fn   func([]byte, any) error
	}{{"DecodeJSON", DecodeJSON}, {"strict", decodeJSONStrict}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.fn(raw, &Pod{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
