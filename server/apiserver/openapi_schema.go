package apiserver

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/resource"
)

// This file derives OpenAPI v3 schemas from skiff's Go API types by
// reflection: JSON tags give the property names, Go kinds the types, and
// the struct tags patchStrategy and patchMergeKey (as Kubernetes spells
// them) the x-kubernetes-patch-* extensions that kubectl apply reads to
// compute a strategic merge patch. Schemas are named as Kubernetes names
// them (io.k8s.api.core.v1.PodSpec), so tools that know those names find
// them.

// schema is one OpenAPI schema object, kept generic so it marshals
// exactly as written.
type schema = map[string]any

// Kubernetes schema name prefixes.
const (
	coreV1Prefix = "io.k8s.api.core.v1."
	appsV1Prefix = "io.k8s.api.apps.v1."
	// discoveryV1Prefix names EndpointSlice and its parts.
	discoveryV1Prefix = "io.k8s.api.discovery.v1."
	metaV1Prefix      = "io.k8s.apimachinery.pkg.apis.meta.v1."
	quantityName      = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	intOrStrName      = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	patchName         = metaV1Prefix + "Patch"
	statusName        = metaV1Prefix + "Status"
	deleteOptsName    = metaV1Prefix + "DeleteOptions"
)

var (
	timeType        = reflect.TypeFor[api.Time]()
	microTimeType   = reflect.TypeFor[api.MicroTime]()
	intOrStringType = reflect.TypeFor[api.IntOrString]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshalType = reflect.TypeFor[encoding.TextMarshaler]()
)

// metaTypes are the api types Kubernetes defines in meta/v1.
var metaTypes = map[string]bool{
	"ObjectMeta": true, "OwnerReference": true, "ListMeta": true, "LabelSelector": true,
	"LabelSelectorRequirement": true, "Status": true, "StatusDetails": true, "StatusCause": true,
}

// discoveryV1Types are the api types of discovery.k8s.io/v1.
var discoveryV1Types = map[string]bool{
	"EndpointSlice": true, "Endpoint": true, "EndpointConditions": true, "EndpointHints": true, "ForZone": true,
}

// schemaName returns the Kubernetes-style component name of struct type t.
func schemaName(t reflect.Type) string {
	name := t.Name()
	switch {
	case t == quantityType:
		return quantityName
	case t == intOrStringType:
		return intOrStrName
	case t.PkgPath() != reflect.TypeFor[api.Pod]().PkgPath():
		return strings.ReplaceAll(t.PkgPath(), "/", ".") + "." + name
	case metaTypes[name]:
		return metaV1Prefix + name
	case strings.HasPrefix(name, "Deployment"), strings.HasPrefix(name, "DaemonSet"), strings.HasPrefix(name, "RollingUpdate"):
		return appsV1Prefix + name
	case discoveryV1Types[name]:
		return discoveryV1Prefix + name
	}
	return coreV1Prefix + name
}

// schemaBuilder collects the component schemas reachable from the types
// it is asked about. It is used by one goroutine at a time.
type schemaBuilder struct {
	components map[string]schema
	docs       map[string]string // "PodSpec" and "PodSpec.containers" → description
}

func newSchemaBuilder(docs map[string]string) *schemaBuilder {
	return &schemaBuilder{components: map[string]schema{}, docs: docs}
}

func refTo(name string) schema { return schema{"$ref": "#/components/schemas/" + name} }

// component adds the schema of struct type t (and everything it reaches)
// and returns its name.
func (b *schemaBuilder) component(t reflect.Type) string {
	name := schemaName(t)
	if _, ok := b.components[name]; ok {
		return name
	}
	s := schema{"type": "object"}
	b.components[name] = s // placed first, so recursive types terminate
	if d := b.docs[t.Name()]; d != "" {
		s["description"] = d
	}
	props := schema{}
	b.addFields(t, t.Name(), props)
	if len(props) > 0 {
		s["properties"] = props
	}
	return name
}

// addFields adds the JSON properties of struct t to props, flattening
// embedded and ",inline" fields as encoding/json does. owner names the
// struct whose documentation applies.
func (b *schemaBuilder) addFields(t reflect.Type, owner string, props schema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if name == "" && (f.Anonymous || strings.Contains(opts, "inline")) && ft.Kind() == reflect.Struct {
			b.addFields(ft, ft.Name(), props)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := b.schemaOf(f.Type)
		if d := b.docs[owner+"."+name]; d != "" {
			p = withDescription(p, d)
		}
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			p = withExtension(p, "x-kubernetes-patch-strategy", ps)
		}
		if mk := f.Tag.Get("patchMergeKey"); mk != "" {
			p = withExtension(p, "x-kubernetes-patch-merge-key", mk)
		}
		props[name] = p
	}
}

// withDescription returns p with a description. A bare $ref may not have
// siblings, so it is wrapped in allOf, as Kubernetes does.
func withDescription(p schema, d string) schema {
	if _, ok := p["$ref"]; ok {
		return schema{"allOf": []schema{p}, "description": d}
	}
	p["description"] = d
	return p
}

// withExtension is withDescription for an x- extension.
func withExtension(p schema, key, value string) schema {
	if _, ok := p["$ref"]; ok {
		p = schema{"allOf": []schema{p}}
	}
	p[key] = value
	return p
}

// schemaOf returns the schema of a property of type t: inline for scalars,
// lists and maps, a $ref for structs.
func (b *schemaBuilder) schemaOf(t reflect.Type) schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType, microTimeType:
		return schema{"type": "string", "format": "date-time"}
	case intOrStringType:
		if _, ok := b.components[intOrStrName]; !ok {
			b.components[intOrStrName] = schema{"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": true,
				"description": "IntOrString is a type that can hold an int32 or a string."}
		}
		return refTo(intOrStrName)
	case quantityType:
		if _, ok := b.components[quantityName]; !ok {
			b.components[quantityName] = schema{"type": "string", "x-kubernetes-int-or-string": true,
				"description": "Quantity is a fixed-point representation of a number: 500m, 1.5, 128Mi, 2Gi."}
		}
		return refTo(quantityName)
	}
	if t.Kind() != reflect.Interface && (t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) ||
		t.Implements(textMarshalType) || reflect.PointerTo(t).Implements(textMarshalType)) {
		return schema{"type": "string"}
	}
	switch t.Kind() {
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return schema{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return schema{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "format": "byte"}
		}
		return schema{"type": "array", "items": b.schemaOf(t.Elem())}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": b.schemaOf(t.Elem())}
	case reflect.Struct:
		return refTo(b.component(t))
	}
	return schema{"x-kubernetes-preserve-unknown-fields": true}
}
