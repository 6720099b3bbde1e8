package deepcopy

import (
	"reflect"
	"sync"
)

// Of returns a deep copy of *src, or nil for nil.
func Of[T any](src *T) *T { return Value(src) }

// Value returns a deep copy of v: a pointer's copy points to a copy, an
// interface's holds one (an api.Object's copy is a new object).
func Value[T any](v T) T {
	out := v
	if f := fixerOf(reflect.TypeFor[T]()); f.fn != nil {
		f.fn(reflect.ValueOf(&out).Elem(), reflect.ValueOf(&v).Elem())
	}
	return out
}

// A fixer makes dst, a shallow copy of src, deep: it replaces what dst
// shares with src through exported fields by copies. A nil fn: the
// type's shallow copy is deep already (no pointers, slices, maps or
// interfaces in exported reach).
type fixer struct {
	fn func(dst, src reflect.Value)
}

var (
	fixers  sync.Map   // reflect.Type → *fixer, complete
	buildMu sync.Mutex // one build at a time
)

func fixerOf(t reflect.Type) *fixer {
	if f, ok := fixers.Load(t); ok {
		return f.(*fixer)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	building := map[reflect.Type]*fixer{}
	f := build(t, building)
	for t, f := range building {
		fixers.Store(t, f)
	}
	return f
}

// build returns t's fixer. A type met again while it is being built (a
// struct that points to its own type) gets the fixer under construction.
// Only pointers, slices, maps and arrays lead back to a type being built
// (a struct cannot hold itself), and their fn is set before their element
// is built, so a struct's fields see every deep type as deep.
func build(t reflect.Type, building map[reflect.Type]*fixer) *fixer {
	if f, ok := fixers.Load(t); ok {
		return f.(*fixer)
	}
	if f, ok := building[t]; ok {
		return f
	}
	f := &fixer{}
	building[t] = f
	switch t.Kind() {
	case reflect.Pointer:
		et := t.Elem()
		var elem *fixer
		f.fn = func(dst, src reflect.Value) {
			if src.IsNil() {
				return
			}
			n := reflect.New(et)
			n.Elem().Set(src.Elem())
			if elem.fn != nil {
				elem.fn(n.Elem(), src.Elem())
			}
			dst.Set(n)
		}
		elem = build(et, building)
	case reflect.Slice:
		var elem *fixer
		f.fn = func(dst, src reflect.Value) {
			if src.IsNil() {
				return
			}
			n := reflect.MakeSlice(t, src.Len(), src.Len())
			reflect.Copy(n, src)
			if elem.fn != nil {
				for i := range src.Len() {
					elem.fn(n.Index(i), src.Index(i))
				}
			}
			dst.Set(n)
		}
		elem = build(t.Elem(), building)
	case reflect.Array:
		switch t.Elem().Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Struct, reflect.Array:
		default:
			return f // numbers, strings: Go's own copy is whole
		}
		var elem *fixer
		f.fn = func(dst, src reflect.Value) {
			if elem.fn != nil {
				for i := range src.Len() {
					elem.fn(dst.Index(i), src.Index(i))
				}
			}
		}
		elem = build(t.Elem(), building)
	case reflect.Map:
		var key, elem *fixer
		f.fn = func(dst, src reflect.Value) {
			if src.IsNil() {
				return
			}
			n := reflect.MakeMapWithSize(t, src.Len())
			it := src.MapRange()
			for it.Next() {
				n.SetMapIndex(copied(key, it.Key()), copied(elem, it.Value()))
			}
			dst.Set(n)
		}
		key, elem = build(t.Key(), building), build(t.Elem(), building)
	case reflect.Interface:
		f.fn = func(dst, src reflect.Value) {
			if src.IsNil() {
				return
			}
			v := src.Elem()
			dst.Set(copied(fixerOf(v.Type()), v))
		}
	case reflect.Struct:
		var idx []int
		var fs []*fixer
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			if ff := build(sf.Type, building); ff.fn != nil {
				idx, fs = append(idx, i), append(fs, ff)
			}
		}
		if len(idx) > 0 {
			f.fn = func(dst, src reflect.Value) {
				for k, i := range idx {
					fs[k].fn(dst.Field(i), src.Field(i))
				}
			}
		}
	}
	return f
}

// copied returns a deep copy of v by f, v's type's fixer.
func copied(f *fixer, v reflect.Value) reflect.Value {
	if f.fn == nil {
		return v
	}
	n := reflect.New(v.Type()).Elem()
	n.Set(v)
	f.fn(n, v)
	return n
}
