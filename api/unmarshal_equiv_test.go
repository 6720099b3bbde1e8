package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
)

// fill sets every exported field reachable from v (to a depth) to a value
// that is not its zero: strings name their field, numbers count, slices
// and maps get two entries, pointers are allocated. It makes an object of
// every kind with all of its fields present in JSON.
func fill(v reflect.Value, depth int, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n % 100))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*n % 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) / 4)
	case reflect.Pointer:
		if depth == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth-1, n)
	case reflect.Slice:
		if depth == 0 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), depth-1, n)
		}
		v.Set(s)
	case reflect.Map:
		if depth == 0 || v.Type().Key().Kind() != reflect.String {
			return
		}
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(fmt.Sprintf("k%d-%d", *n, i))
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, depth-1, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth, n)
			}
		}
	}
}

// decodeOwn and decodeV1 decode raw as a fresh object of r's kind, with
// UnmarshalOwn and with encoding/json alone.
func decodeOwn(r ResourceInfo, raw []byte) (Object, error) {
	obj := r.New()
	return obj, UnmarshalOwn(raw, obj)
}

func decodeV1(r ResourceInfo, raw []byte) (Object, error) {
	obj := r.New()
	return obj, json.Unmarshal(raw, obj)
}

// TestUnmarshalOwnMatchesEncodingJSONForEveryKind: an object of every kind with
// every field set decodes to what encoding/json decodes, field for field.
func TestUnmarshalOwnMatchesEncodingJSONForEveryKind(t *testing.T) {
	for _, r := range Resources() {
		raw := fullObject(r, 4)
		want, err := decodeV1(r, raw)
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", r.Kind, err)
		}
		got, err := decodeOwn(r, raw)
		if err != nil {
			t.Fatalf("%s: decode: %v", r.Kind, err)
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			t.Errorf("%s: UnmarshalOwn differs from encoding/json:\n got %s\nwant %s", r.Kind, g, raw)
		}
	}
}

// FuzzUnmarshalOwnMatchesEncodingJSON: whatever UnmarshalOwn accepts, encoding/json
// accepts and reads the same way (UnmarshalOwn falls back to it for the rest).
func FuzzUnmarshalOwnMatchesEncodingJSON(f *testing.F) {
	addPodSeeds(f)
	f.Add([]byte(`{"status":{"startTime":null,"conditions":[{"lastTransitionTime":"2026-01-02T03:04:05Z"}]},"spec":{"containers":[{"resources":{"limits":{"cpu":"1500m"}}}]}}`))
	infos := Resources()
	pods, _ := LookupResource("pods")
	f.Fuzz(func(t *testing.T, raw []byte) {
		// As a Pod and as one other kind: every kind on every input made
		// each run, and the fuzzer's minimising, slow.
		for _, r := range []ResourceInfo{pods, infos[len(raw)%len(infos)]} {
			got, err := decodeOwn(r, raw)
			want, werr := decodeV1(r, raw)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%s: UnmarshalOwn error %v, encoding/json error %v", r.Kind, err, werr)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("%s: %q decodes to\n%s\nencoding/json to\n%s", r.Kind, raw, g, w)
			}
		}
	})
}

// TestUnmarshalOwnMatchesEncodingJSONOnMutations runs FuzzUnmarshalOwnMatchesEncodingJSON's
// check over seeded random mutations of every kind's full object: bytes
// replaced, names' case flipped, spans repeated (duplicate names).
func TestUnmarshalOwnMatchesEncodingJSONOnMutations(t *testing.T) {
	infos := Resources()
	seeds := fullObjects(infos, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	mutations, v2ok := 2000, 0
	if testing.Short() {
		mutations = 300
	}
	for range mutations {
		k := rng.IntN(len(seeds))
		s := mutate(rng, seeds[k], false)
		// As the seed's own kind, where every name matches a field, and
		// as another, where most do not.
		for _, r := range []ResourceInfo{infos[k], infos[rng.IntN(len(infos))]} {
			got, err := decodeOwn(r, s)
			want, werr := decodeV1(r, s)
			if (err == nil) != (werr == nil) {
				t.Fatalf("%s: UnmarshalOwn error %v, encoding/json error %v: %q", r.Kind, err, werr, s)
			}
			if err != nil {
				continue
			}
			if jsonv2.Unmarshal(s, r.New(), ownJSON) == nil {
				v2ok++
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("%s: %q decodes to\n%s\nencoding/json to\n%s", r.Kind, s, g, w)
			}
		}
	}
	if v2ok == 0 {
		t.Fatal("no mutation was decoded by the fast path: the check compared nothing")
	}
	t.Logf("%d decodes through the fast path matched encoding/json", v2ok)
}

// fullObjects is one object of each kind in infos with every field set
// (to depth), as JSON.
func fullObjects(infos []ResourceInfo, depth int) [][]byte {
	var seeds [][]byte
	for _, r := range infos {
		seeds = append(seeds, fullObject(r, depth))
	}
	return seeds
}

// fullObject is an object of r's kind with every field set (to depth),
// as JSON.
func fullObject(r ResourceInfo, depth int) []byte {
	obj := r.New()
	n := 0
	fill(reflect.ValueOf(obj).Elem(), depth, &n)
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("%s: marshal: %v", r.Kind, err))
	}
	return raw
}

// mutate returns a copy of seed with one to three random edits: a byte
// replaced, a letter's case flipped, a span repeated (names repeat), or,
// when gentle (only then), a letter for a letter and a digit for a digit,
// which mostly keeps the document valid.
func mutate(rng *rand.Rand, seed []byte, gentle bool) []byte {
	s := bytes.Clone(seed)
	for range 1 + rng.IntN(3) {
		i := rng.IntN(len(s))
		if gentle {
			switch c := s[i]; {
			case c >= 'a' && c <= 'z':
				s[i] = 'a' + byte(rng.IntN(26))
			case c >= '0' && c <= '9':
				s[i] = '0' + byte(rng.IntN(10))
			}
			continue
		}
		switch rng.IntN(3) {
		case 0:
			s[i] = byte(rng.IntN(256))
		case 1:
			s[i] ^= 0x20 // flips the case of a letter
		case 2:
			j := min(len(s), i+1+rng.IntN(40))
			s = append(s[:j], append(bytes.Clone(s[i:j]), s[j:]...)...)
		}
	}
	return s
}

// addPodSeeds adds the decoders' fuzz targets' common seeds: a full Pod,
// the same with every name's case changed, and repeated names with
// invalid UTF-8.
func addPodSeeds(f *testing.F) {
	pods, _ := LookupResource("pods")
	raw := fullObject(pods, 3)
	f.Add(raw)
	f.Add(bytes.ToUpper(raw))
	f.Add([]byte("{\"metadata\":{\"name\":\"a\",\"NAME\":\"b\",\"labels\":{\"x\":\"1\",\"x\":\"2\"}},\"spec\":{\"nodeName\":\"n\xff\"}}"))
}
