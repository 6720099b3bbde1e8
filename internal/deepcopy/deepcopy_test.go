package deepcopy_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
	"github.com/skiffhq/skiff/internal/deepcopy"
)

// fill sets every exported field reachable from v to a non-zero value
// derived from seed: strings, numbers and bools; two elements in each
// slice and map; a value behind each pointer.
func fill(v reflect.Value, seed string, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(seed)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(len(seed)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(len(seed)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(len(seed)))
	case reflect.Pointer:
		n := reflect.New(v.Type().Elem())
		fill(n.Elem(), seed, depth+1)
		v.Set(n)
	case reflect.Slice:
		n := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(n.Index(i), fmt.Sprint(seed, i), depth+1)
		}
		v.Set(n)
	case reflect.Map:
		n := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, fmt.Sprint(seed, "k", i), depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, fmt.Sprint(seed, "v", i), depth+1)
			n.SetMapIndex(k, e)
		}
		v.Set(n)
	case reflect.Struct:
		switch v.Addr().Interface().(type) {
		case *time.Time:
			v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 3, 4, 5, len(seed), time.UTC)))
			return
		case *resource.Quantity:
			v.Set(reflect.ValueOf(resource.MustParse(fmt.Sprint(len(seed), "Mi"))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed+"."+v.Type().Field(i).Name, depth+1)
			}
		}
	}
}

// noShared fails t for every pointer, slice or map reachable through
// exported fields that a and b share.
func noShared(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the pointer", path)
			return
		}
		noShared(t, path, a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the slice", path)
			return
		}
		for i := range a.Len() {
			noShared(t, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	case reflect.Map:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: the copy shares the map", path)
			return
		}
		for _, k := range a.MapKeys() {
			noShared(t, fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k))
		}
	case reflect.Array:
		for i := range a.Len() {
			noShared(t, fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i))
		}
	case reflect.Interface:
		if !a.IsNil() {
			noShared(t, path, a.Elem(), b.Elem())
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				noShared(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
			}
		}
	}
}

// TestOfCopiesAPodWhole: every field of a pod with every field set is
// copied, and the copy shares nothing with the original.
func TestOfCopiesAPodWhole(t *testing.T) {
	pod := &api.Pod{}
	fill(reflect.ValueOf(pod).Elem(), "a", 0)
	want, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	c := deepcopy.Of(pod)
	if !reflect.DeepEqual(c, pod) {
		t.Fatal("the copy differs from the original")
	}
	noShared(t, "pod", reflect.ValueOf(c), reflect.ValueOf(pod))
	// Writing all over the copy leaves the original as it was.
	fill(reflect.ValueOf(c).Elem(), "bb", 0)
	if got, _ := json.Marshal(pod); string(got) != string(want) {
		t.Errorf("changing the copy changed the original:\n%s\nwant\n%s", got, want)
	}
	if deepcopy.Of[api.Pod](nil) != nil {
		t.Error("Of(nil) is not nil")
	}
}

type link struct {
	Next  *link
	Vals  []int
	Any   any
	ByKey map[string]*link
	Arr   [2]*int
	note  *int // unexported: shared, as Go copies it
}

func TestOfFollowsTypesThatReferToThemselves(t *testing.T) {
	one, two := 1, 2
	src := &link{Vals: []int{1}, Any: &link{Vals: []int{2}}, ByKey: map[string]*link{"k": {Vals: []int{3}}},
		Arr: [2]*int{&one, &two}, note: &one, Next: &link{Vals: []int{4}}}
	c := deepcopy.Of(src)
	if !reflect.DeepEqual(c, src) {
		t.Fatalf("copy %+v differs from %+v", c, src)
	}
	noShared(t, "link", reflect.ValueOf(c), reflect.ValueOf(src))
	if c.note != src.note {
		t.Error("an unexported pointer was copied; Go's copy shares it")
	}
}

// fleetPod is a pod as an agent holds it: a Deployment's replica, bound
// and Running.
func fleetPod() *api.Pod {
	p := &api.Pod{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"fleet-web-6d9f7c-abcde","namespace":"default","uid":"3f1c7e2a-0000-4000-8000-000000000001",
	"resourceVersion":"123456","labels":{"app":"fleet-web","pod-template-hash":"6d9f7c"},
	"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"fleet-web-6d9f7c","uid":"u","controller":true}]},
	"spec":{"nodeName":"node-00042","containers":[{"name":"web","image":"busybox:stable","command":["httpd","-f"],
	"resources":{"requests":{"cpu":"10m","memory":"16Mi"},"limits":{"memory":"32Mi"}}}],
	"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"fleet-web"}}}]},
	"status":{"phase":"Running","hostIP":"10.0.0.42","podIP":"10.0.0.42","podIPs":[{"ip":"10.0.0.42"}],"startTime":"2026-12-02T03:04:05Z","qosClass":"Burstable",
	"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-12-02T03:04:05Z"}],
	"containerStatuses":[{"name":"web","image":"busybox:stable","imageID":"fleetsim://busybox","containerID":"fleetsim://x/web","ready":true,"started":true,
	"state":{"running":{"startedAt":"2026-12-02T03:04:05Z"}}}]}}`), p); err != nil {
		panic(err)
	}
	return p
}

func BenchmarkCopyPod(b *testing.B) {
	p := fleetPod()
	b.Run("deepcopy", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			deepcopy.Of(p)
		}
	})
	b.Run("json round trip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw, _ := json.Marshal(p)
			out := &api.Pod{}
			if err := api.UnmarshalOwn(raw, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestValueCopiesWhatAnInterfaceHolds: an api.Object's copy is a new
// object of the same type, sharing nothing.
func TestValueCopiesWhatAnInterfaceHolds(t *testing.T) {
	var obj api.Object = fleetPod()
	c := deepcopy.Value(obj)
	p, ok := c.(*api.Pod)
	if !ok || p == obj.(*api.Pod) {
		t.Fatalf("copy is %T %p; want a new *api.Pod", c, c)
	}
	if !reflect.DeepEqual(c, obj) {
		t.Fatal("the copy differs from the original")
	}
	noShared(t, "object", reflect.ValueOf(c), reflect.ValueOf(obj))
	var none api.Object
	if deepcopy.Value(none) != nil {
		t.Error("the copy of a nil interface is not nil")
	}
}

// Types that lead back to themselves through a named slice and through
// an array of pointers: the struct's field must be copied deeply though
// its type is still being worked out when the struct's plan is made.
type (
	tree     struct{ Kids children }
	children []tree
	ring     [1]*cell
	cell     struct {
		Next ring
		Val  []int
	}
)

func TestOfFollowsNamedSlicesAndArraysBack(t *testing.T) {
	// Each plan is first made from the slice and the array, so that the
	// struct's is made while theirs are still in the works.
	kids := children{{Kids: children{{}}}}
	noShared(t, "children", reflect.ValueOf(deepcopy.Value(kids)), reflect.ValueOf(kids))
	r := ring{{Next: ring{{Val: []int{1}}}, Val: []int{2}}}
	rc := deepcopy.Value(r)
	if !reflect.DeepEqual(rc, r) {
		t.Fatal("the copy differs from the original")
	}
	noShared(t, "ring", reflect.ValueOf(rc), reflect.ValueOf(r))
}
