package api

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"sigs.k8s.io/yaml"
)

// DecodeError is a body that could not be decoded: malformed JSON or YAML,
// a value of the wrong type, or a field the type does not have. The server
// answers it with 400 BadRequest.
type DecodeError struct {
	Field string // JSON path of the offending field; "" when syntax is at fault
	Msg   string
	// More lists further offending fields (same Msg), when there are.
	More []string
}

// Error implements error, in the words Kubernetes uses for strict
// decoding: each field quoted once, as in
// `strict decoding error: unknown field "a", unknown field "b"`.
func (e *DecodeError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	var b strings.Builder
	b.WriteString("strict decoding error: ")
	for i, f := range append([]string{e.Field}, e.More...) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.Msg + " " + quote(f))
	}
	return b.String()
}

// DecodeJSON decodes data into into (a pointer), rejecting unknown fields
// with a DecodeError naming each one by its full path.
//
// A body that decodes cleanly takes one pass of encoding/json/v2's
// decoder with unknown members refused (decodeStrictFast); anything it
// refuses, and every error, goes through decodeJSONStrict, which decodes
// generically to name every unknown field and then decodes again with
// encoding/json: three passes, which made it the largest single cost of
// an agent's status write. FuzzDecodeJSONFastPathMatchesStrict and the
// per-kind and mutation tests beside it check that both paths agree.
func DecodeJSON(data []byte, into any) error {
	if decodeStrictFast(data, into) {
		return nil
	}
	return decodeJSONStrict(data, into)
}

// maxFastStrictBytes bounds the bodies decodeStrictFast takes: no list in
// a document this short can exceed MaxDecodeListItems (n items take at
// least 2n+1 bytes), the one limit decodeJSONStrict checks that the fast
// decoder does not.
const maxFastStrictBytes = 2*MaxDecodeListItems + 2

// strictJSON is UnmarshalOwn's leniency (a repeated name keeps the last
// value, invalid UTF-8 is replaced) with names matched exactly and unknown
// ones refused, as decodeJSONStrict's field walk does.
var strictJSON = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// decodeStrictFast decodes data into into in one pass and reports
// whether it did; when it did not, into is as it was (zero).
func decodeStrictFast(data []byte, into any) bool {
	if len(data) > maxFastStrictBytes {
		return false
	}
	// An object only: null, an empty body and the like are
	// decodeJSONStrict's errors.
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return false
	}
	// Into a zero value only, where decoding cannot merge with what is
	// there (the two decoders merge differently).
	rv := reflect.ValueOf(into)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || !rv.Elem().IsZero() {
		return false
	}
	if jsonv2.Unmarshal(data, into, strictJSON) == nil {
		return true
	}
	rv.Elem().SetZero()
	return false
}

// decodeJSONStrict is DecodeJSON without its fast path.
func decodeJSONStrict(data []byte, into any) error {
	var generic any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&generic); err != nil {
		return &DecodeError{Msg: "malformed JSON: " + err.Error()}
	}
	if d.More() {
		return &DecodeError{Msg: "malformed JSON: unexpected data after the top-level value"}
	}
	if generic == nil {
		// An empty YAML document becomes null: it must not decode as the
		// zero object (a PUT of it would wipe the stored one).
		return &DecodeError{Msg: "malformed request: the body is empty or null; an object is required"}
	}
	w := fieldWalker{memo: map[reflect.Type]map[string]reflect.Type{}}
	w.walk(generic, reflect.TypeOf(into), Path{})
	if w.tooLong != nil {
		return w.tooLong
	}
	if len(w.unknown) > 0 {
		sort.Strings(w.unknown)
		return &DecodeError{Field: w.unknown[0], More: w.unknown[1:], Msg: "unknown field"}
	}
	if err := json.Unmarshal(data, into); err != nil {
		return translateJSONError(err)
	}
	return nil
}

// DecodeYAML decodes one YAML (or JSON) document into into, with the same
// strictness as DecodeJSON.
func DecodeYAML(data []byte, into any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return &DecodeError{Msg: "malformed YAML: " + strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}
	}
	return DecodeJSON(j, into)
}

// Decode decodes data as JSON when it looks like JSON and as YAML
// otherwise.
func Decode(data []byte, into any) error {
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) > 0 && t[0] == '{' {
		if err := DecodeJSON(data, into); err == nil || !isSyntax(err) {
			return err
		}
	}
	return DecodeYAML(data, into)
}

func isSyntax(err error) bool {
	var de *DecodeError
	return errors.As(err, &de) && strings.HasPrefix(de.Msg, "malformed")
}

// DecodeObject decodes one document into the Go type its apiVersion and
// kind name. Unknown kinds are a DecodeError.
func DecodeObject(data []byte) (Object, error) {
	var tm TypeMeta
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &DecodeError{Msg: "malformed YAML: " + strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")}
	}
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, &DecodeError{Msg: "malformed object: " + err.Error()}
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, &DecodeError{Msg: "object has no apiVersion or kind"}
	}
	r, ok := ResourceForKind(tm.APIVersion, tm.Kind)
	if !ok {
		return nil, &DecodeError{Msg: fmt.Sprintf("no kind %q is registered for version %q", tm.Kind, tm.APIVersion)}
	}
	obj := r.New()
	if err := DecodeJSON(j, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// SplitYAML splits a multi-document YAML stream at "---" lines, dropping
// documents that hold only whitespace and comments.
func SplitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		trimmed := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("--- ")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("...")) {
			return true
		}
	}
	return false
}

func translateJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "(root)"
		}
		return &DecodeError{Msg: fmt.Sprintf("%s: expected %s, got %s", field, typeName(te.Type), te.Value)}
	}
	return &DecodeError{Msg: "invalid value: " + strings.TrimPrefix(err.Error(), "json: ")}
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return t.String()
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// MaxDecodeListItems is the most items any one list of a decoded object
// may have. Validation caps each list far lower, with a field path; this
// coarse cap stops a huge list before it is decoded into typed structs,
// the costly step.
const MaxDecodeListItems = 10000

// fieldWalker walks a generic JSON value against a Go type, collecting
// unknown fields and the first list longer than MaxDecodeListItems.
type fieldWalker struct {
	memo    map[reflect.Type]map[string]reflect.Type // jsonFieldsOf by type
	unknown []string
	tooLong *DecodeError
}

func (w *fieldWalker) fields(t reflect.Type) map[string]reflect.Type {
	f, ok := w.memo[t]
	if !ok {
		f = jsonFieldsOf(t)
		w.memo[t] = f
	}
	return f
}

func (w *fieldWalker) walk(v any, t reflect.Type, p Path) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return // a type error json.Unmarshal reports
		}
		fields := w.fields(t)
		for k, val := range m {
			ft, ok := fields[k]
			if !ok {
				w.unknown = append(w.unknown, p.Child(k).String())
				continue
			}
			w.walk(val, ft, p.Child(k))
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			for k, val := range m {
				w.walk(val, t.Elem(), p.Key(k))
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return
		}
		l, ok := v.([]any)
		if !ok {
			return
		}
		if len(l) > MaxDecodeListItems {
			if w.tooLong == nil {
				w.tooLong = &DecodeError{Field: p.String(), Msg: fmt.Sprintf("list of %d items, more than %d, at", len(l), MaxDecodeListItems)}
			}
			return
		}
		for i, val := range l {
			w.walk(val, t.Elem(), p.Index(i))
		}
	}
}

// jsonFieldsOf maps the JSON names of t's fields (with embedded structs
// inlined, as encoding/json does) to their types.
func jsonFieldsOf(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFieldsOf(ft) {
					if _, dup := fields[k]; !dup {
						fields[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
