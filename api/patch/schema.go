package patch

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// schema is the patch metadata of one JSON value, read lazily from the Go
// type it decodes into. A nil type means "unknown": objects merge key by
// key and lists are replaced, as in a JSON merge patch.
type schema struct {
	t reflect.Type
}

// fieldMeta is what a struct field's tags say about patching it.
// ("retainKeys" needs no metadata: the $retainKeys directive is honoured
// wherever a patch carries it, as in Kubernetes.)
type fieldMeta struct {
	schema          // the field's own type
	merge    bool   // patchStrategy has "merge": merge a list
	replace  bool   // patchStrategy has "replace": never merge the value
	mergeKey string // patchMergeKey: identifies elements of a merged list of objects
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func newSchema(t reflect.Type) schema {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return schema{}
	}
	// Types with their own JSON form (times, quantities, int-or-string)
	// are opaque scalars to a patch.
	if t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType) ||
		t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return schema{}
	}
	return schema{t: t}
}

// field returns the metadata of the member name of an object of this
// schema: a struct field (tags included) or a map value.
func (s schema) field(name string) fieldMeta {
	var fm fieldMeta
	if s.t == nil {
		return fm
	}
	switch s.t.Kind() {
	case reflect.Map:
		fm.schema = newSchema(s.t.Elem())
	case reflect.Struct:
		f, ok := structField(s.t, name)
		if !ok {
			return fm
		}
		fm.schema = newSchema(f.Type)
		for st := range strings.SplitSeq(f.Tag.Get("patchStrategy"), ",") {
			switch st {
			case "merge":
				fm.merge = true
			case "replace":
				fm.replace = true
			}
		}
		fm.mergeKey = f.Tag.Get("patchMergeKey")
	}
	return fm
}

// elem returns the schema of the elements of a list of this schema.
func (s schema) elem() schema {
	if s.t == nil {
		return schema{}
	}
	switch s.t.Kind() {
	case reflect.Slice, reflect.Array:
		return newSchema(s.t.Elem())
	}
	return schema{}
}

// structField finds the field of struct t whose JSON name is name, looking
// through embedded structs the way encoding/json inlines them.
func structField(t reflect.Type, name string) (reflect.StructField, bool) {
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jname, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && jname == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jname == "" {
			jname = f.Name
		}
		if jname == name {
			return f, true
		}
	}
	for _, et := range embedded {
		if f, ok := structField(et, name); ok {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
