package api

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/skiffhq/skiff/api/resource"
)

// maxDiffPaths bounds how many changed fields an error message lists.
const maxDiffPaths = 10

// semanticEqual reports whether a and b hold the same API data: nil and
// empty slices and maps are equal, quantities compare by value and
// timestamps by instant, as Kubernetes' semantic equality does.
func semanticEqual(a, b any) bool {
	d := differ{max: 1}
	d.diff(reflect.ValueOf(a), reflect.ValueOf(b))
	return len(d.paths) == 0
}

// changedPaths returns the JSON paths under p at which a and b (values of
// the same type) differ semantically, at most maxDiffPaths of them.
func changedPaths(a, b any, p Path) []string {
	d := differ{max: maxDiffPaths, root: p}
	d.diff(reflect.ValueOf(a), reflect.ValueOf(b))
	return d.paths
}

// differ walks two values of the same type in step, recording the paths
// of the fields that differ.
type differ struct {
	max   int
	paths []string
	// Where the walk stands: root, then a step for each field, element
	// or key it went into. The Path is built only when a difference is
	// recorded: most walks find none, and building every field's path
	// as the walk passed it was most of what validating a pod status
	// write allocated.
	root  Path
	steps []step
}

// step is one move of a differ's walk: into field name, element index
// or map key name.
type step struct {
	kind  stepKind
	name  string
	index int
}

type stepKind uint8

const (
	intoField stepKind = iota
	intoElement
	intoKey
)

// add records the place the walk stands at.
func (d *differ) add() {
	if len(d.paths) >= d.max {
		return
	}
	p := d.root
	for _, s := range d.steps {
		switch s.kind {
		case intoElement:
			p = p.Index(s.index)
		case intoKey:
			p = p.Key(s.name)
		default:
			p = p.Child(s.name)
		}
	}
	d.paths = append(d.paths, p.String())
}

// into walks a and b, which are under the place the walk stands at by
// s.
func (d *differ) into(s step, a, b reflect.Value) {
	d.steps = append(d.steps, s)
	d.diff(a, b)
	d.steps = d.steps[:len(d.steps)-1]
}

func (d *differ) full() bool { return len(d.paths) >= d.max }

func (d *differ) diff(a, b reflect.Value) {
	if d.full() {
		return
	}
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			d.add()
		}
		return
	}
	if a.Type() != b.Type() {
		d.add()
		return
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				d.add()
			}
			return
		}
		d.diff(a.Elem(), b.Elem())
	case reflect.Struct:
		d.diffStruct(a, b)
	case reflect.Slice, reflect.Array:
		if a.Type().Elem().Kind() == reflect.Uint8 && a.Kind() == reflect.Slice {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				d.add()
			}
			return
		}
		if a.Len() != b.Len() {
			d.add()
			return
		}
		for i := 0; i < a.Len() && !d.full(); i++ {
			d.into(step{kind: intoElement, index: i}, a.Index(i), b.Index(i))
		}
	case reflect.Map:
		keys := map[string]reflect.Value{}
		for _, m := range []reflect.Value{a, b} {
			for _, k := range m.MapKeys() {
				keys[keyText(k)] = k
			}
		}
		for _, ks := range sortedKeys(keys) {
			k := keys[ks]
			d.into(step{kind: intoKey, name: ks}, a.MapIndex(k), b.MapIndex(k))
		}
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		if !a.Equal(b) {
			d.add()
		}
	default:
		// Channels and functions do not occur in API types.
		if a.CanInterface() && b.CanInterface() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			d.add()
		}
	}
}

func (d *differ) diffStruct(a, b reflect.Value) {
	switch a.Type() {
	case reflect.TypeFor[resource.Quantity]():
		if a.CanInterface() && a.Interface().(resource.Quantity).Cmp(b.Interface().(resource.Quantity)) != 0 {
			d.add()
		}
		return
	case reflect.TypeFor[time.Time]():
		if a.CanInterface() && !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
			d.add()
		}
		return
	}
	t := a.Type()
	for i := 0; i < t.NumField() && !d.full(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, inline := jsonFieldName(f)
		if name == "-" {
			continue
		}
		if inline {
			d.diff(a.Field(i), b.Field(i))
		} else {
			d.into(step{kind: intoField, name: name}, a.Field(i), b.Field(i))
		}
	}
}

// jsonFieldName returns the JSON name of f, and whether its fields are
// inlined into the parent's.
func jsonFieldName(f reflect.StructField) (string, bool) {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		if f.Anonymous {
			return "", true
		}
		return f.Name, false
	}
	return name, false
}

func keyText(k reflect.Value) string {
	if k.Kind() == reflect.String {
		return k.String()
	}
	return fmt.Sprint(k)
}
