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
	d.diff(reflect.ValueOf(a), reflect.ValueOf(b), Path{})
	return len(d.paths) == 0
}

// changedPaths returns the JSON paths under p at which a and b (values of
// the same type) differ semantically, at most maxDiffPaths of them.
func changedPaths(a, b any, p Path) []string {
	d := differ{max: maxDiffPaths}
	d.diff(reflect.ValueOf(a), reflect.ValueOf(b), p)
	return d.paths
}

// differ walks two values of the same type in step, recording the paths
// of the fields that differ.
type differ struct {
	max   int
	paths []string
}

func (d *differ) add(p Path) {
	if len(d.paths) < d.max {
		d.paths = append(d.paths, p.String())
	}
}

func (d *differ) full() bool { return len(d.paths) >= d.max }

func (d *differ) diff(a, b reflect.Value, p Path) {
	if d.full() {
		return
	}
	if !a.IsValid() || !b.IsValid() {
		if a.IsValid() != b.IsValid() {
			d.add(p)
		}
		return
	}
	if a.Type() != b.Type() {
		d.add(p)
		return
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				d.add(p)
			}
			return
		}
		d.diff(a.Elem(), b.Elem(), p)
	case reflect.Struct:
		d.diffStruct(a, b, p)
	case reflect.Slice, reflect.Array:
		if a.Type().Elem().Kind() == reflect.Uint8 && a.Kind() == reflect.Slice {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				d.add(p)
			}
			return
		}
		if a.Len() != b.Len() {
			d.add(p)
			return
		}
		for i := 0; i < a.Len() && !d.full(); i++ {
			d.diff(a.Index(i), b.Index(i), p.Index(i))
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
			va, vb := a.MapIndex(k), b.MapIndex(k)
			if !va.IsValid() || !vb.IsValid() {
				d.add(p.Key(ks))
				continue
			}
			d.diff(va, vb, p.Key(ks))
		}
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		if !a.Equal(b) {
			d.add(p)
		}
	default:
		// Channels and functions do not occur in API types.
		if a.CanInterface() && b.CanInterface() && !reflect.DeepEqual(a.Interface(), b.Interface()) {
			d.add(p)
		}
	}
}

func (d *differ) diffStruct(a, b reflect.Value, p Path) {
	switch a.Type() {
	case reflect.TypeFor[resource.Quantity]():
		if a.CanInterface() && a.Interface().(resource.Quantity).Cmp(b.Interface().(resource.Quantity)) != 0 {
			d.add(p)
		}
		return
	case reflect.TypeFor[time.Time]():
		if a.CanInterface() && !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
			d.add(p)
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
		fp := p
		if !inline {
			fp = p.Child(name)
		}
		d.diff(a.Field(i), b.Field(i), fp)
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
