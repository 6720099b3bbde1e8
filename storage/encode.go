package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/api/fields"
	"github.com/skiffhq/skiff/api/labels"
)

// rvPlaceholder stands in for metadata.resourceVersion while an object is
// encoded outside the writer, which alone knows the new revision.
const rvPlaceholder = "@rv@"

// rvKey precedes the resourceVersion value in encoded JSON. JSON escapes
// every '"' inside a string, so this byte sequence can only be structure;
// metadata is the first nested object of every kind and resourceVersion
// precedes its nested fields (labels, annotations...), so the first
// occurrence is metadata.resourceVersion. TestEncodeStampsMetadata...
// checks this for every kind.
const rvKey = `"resourceVersion":"`

// key names one object.
type key struct {
	resource, namespace, name string
}

// String returns "pods/default/web" or "nodes/n1", for error messages.
func (k key) String() string {
	if k.namespace == "" {
		return k.resource + "/" + k.name
	}
	return k.resource + "/" + k.namespace + "/" + k.name
}

// encoded is an object ready to be written: its JSON with the placeholder
// where the revision goes, plus the small columns lists and watches filter
// on. It is built by the caller's goroutine so the writer only splices.
type encoded struct {
	key      key
	info     *api.ResourceInfo
	json     []byte // with rvPlaceholder
	at       int    // index of rvPlaceholder in json
	node     string // spec.nodeName
	labels   []byte // JSON, nil when there are none
	fields   []byte // JSON
	labelSet labels.Set
	fieldSet fields.Set
	claims   []string // Options.Claims of the object, sorted
}

// encode marshals obj with its TypeMeta set. obj's resourceVersion is left
// as it was; obj must not be used by other goroutines meanwhile.
func (s *Store) encode(obj api.Object) (*encoded, error) {
	if obj == nil {
		return nil, fmt.Errorf("nil object: %w", ErrInvalid)
	}
	info, ok := s.byType[reflect.TypeOf(obj)]
	if !ok {
		return nil, fmt.Errorf("unsupported type %T: %w", obj, ErrInvalid)
	}
	if reflect.ValueOf(obj).IsNil() {
		return nil, fmt.Errorf("nil %T: %w", obj, ErrInvalid)
	}
	m := obj.GetObjectMeta()
	k := key{resource: info.Resource, namespace: m.Namespace, name: m.Name}
	if err := checkKey(info, k.namespace, k.name); err != nil {
		return nil, err
	}
	*obj.GetTypeMeta() = api.TypeMeta{APIVersion: info.GroupVersion(), Kind: info.Kind}
	saved := m.ResourceVersion
	m.ResourceVersion = rvPlaceholder
	b, err := json.Marshal(obj)
	m.ResourceVersion = saved
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", k, err)
	}
	if len(b) > api.MaxObjectBytes {
		return nil, fmt.Errorf("encode %s: %d bytes, more than %d: %w", k, len(b), api.MaxObjectBytes, ErrTooLarge)
	}
	i := bytes.Index(b, []byte(rvKey+rvPlaceholder+`"`))
	if i < 0 {
		return nil, fmt.Errorf("encode %s: no metadata.resourceVersion in JSON", k)
	}
	e := &encoded{key: k, info: info, json: b, at: i + len(rvKey)}
	if len(m.Labels) > 0 {
		e.labelSet = maps.Clone(labels.Set(m.Labels))
		if e.labels, err = marshalStringMap(e.labelSet); err != nil {
			return nil, fmt.Errorf("encode %s labels: %w", k, err)
		}
	}
	e.fieldSet = api.SelectableFields(obj)
	if e.fields, err = marshalStringMap(e.fieldSet); err != nil {
		return nil, fmt.Errorf("encode %s fields: %w", k, err)
	}
	e.node = e.fieldSet["spec.nodeName"]
	e.claims = s.claimsOf(k.resource, obj)
	return e, nil
}

// withRevision returns the stored JSON: e's with rev as resourceVersion.
func (e *encoded) withRevision(rev int64) []byte {
	out := make([]byte, 0, len(e.json)+16)
	out = append(out, e.json[:e.at]...)
	out = strconv.AppendInt(out, rev, 10)
	return append(out, e.json[e.at+len(rvPlaceholder):]...)
}

// isStored reports whether value is what withRevision(rev) returns,
// without building it.
func (e *encoded) isStored(value []byte, rev int64) bool {
	head, tail := e.json[:e.at], e.json[e.at+len(rvPlaceholder):]
	if len(value) < len(head)+len(tail) || !bytes.HasPrefix(value, head) || !bytes.HasSuffix(value, tail) {
		return false
	}
	var digits [20]byte
	return string(value[len(head):len(value)-len(tail)]) == string(strconv.AppendInt(digits[:0], rev, 10))
}

// restamp returns a copy of the stored value with its resourceVersion
// changed from old to rev; a deletion stores the last state this way.
func restamp(value []byte, old, rev int64) ([]byte, error) {
	pat := strconv.AppendInt([]byte(rvKey), old, 10)
	pat = append(pat, '"')
	i := bytes.Index(value, pat)
	if i < 0 {
		return nil, fmt.Errorf("stored value has no resourceVersion %d: %w", old, ErrCorrupt)
	}
	i += len(rvKey)
	out := make([]byte, 0, len(value)+4)
	out = append(out, value[:i]...)
	out = strconv.AppendInt(out, rev, 10)
	return append(out, value[i+len(pat)-len(rvKey)-1:]...), nil
}

// marshalStringMap is json.Marshal(m), byte for byte, for the labels and
// fields every write stores: keys in order, each key and value between
// quotes. A map with a string encoding/json would escape (a quote, a
// backslash, a control character, <, >, &, or anything not ASCII) goes
// to encoding/json itself. Labels and the fields a write selects on
// (names, node names, phases) never hold one, and encoding/json's map
// encoder was 3 % of a pod status write's allocations.
func marshalStringMap[M ~map[string]string](m M) ([]byte, error) {
	if m == nil {
		return []byte("null"), nil
	}
	n := 2
	for k, v := range m {
		if !plainJSON(k) || !plainJSON(v) {
			return json.Marshal(m)
		}
		n += len(k) + len(v) + 6
	}
	var buf [8]string // labels and fields are a few keys: no allocation
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, `":"`...)
		b = append(b, m[k]...)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// plainJSON reports whether s is printable ASCII that JSON (as
// encoding/json writes it) quotes as it is.
func plainJSON[T string | []byte](s T) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// checkKey rejects names the store cannot key on.
func checkKey(info *api.ResourceInfo, namespace, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: metadata.name is required: %w", info.Resource, ErrInvalid)
	case info.Namespaced && namespace == "":
		return fmt.Errorf("%s/%s: metadata.namespace is required: %w", info.Resource, name, ErrInvalid)
	case !info.Namespaced && namespace != "":
		return fmt.Errorf("%s/%s: %s are not namespaced: %w", info.Resource, name, info.Resource, ErrInvalid)
	}
	return nil
}

// decode unmarshals a stored value into a new object of info's type.
func decode(info *api.ResourceInfo, value []byte) (api.Object, error) {
	obj := info.New()
	if err := api.UnmarshalOwn(value, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s: %w: %w", info.Resource, ErrCorrupt, err)
	}
	return obj, nil
}

// parseRevision parses a resourceVersion; "" is 0 (no precondition).
func parseRevision(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("resourceVersion %q is not a positive integer: %w", rv, ErrInvalid)
	}
	return n, nil
}

// decodeSets decodes stored labels and fields columns; NULL is empty.
func decodeSets(rawLabels, rawFields []byte) (labels.Set, fields.Set, error) {
	var ls labels.Set
	var fs fields.Set
	if len(rawLabels) > 0 {
		if err := unmarshalStringMap(rawLabels, &ls); err != nil {
			return nil, nil, fmt.Errorf("decode stored labels: %w: %w", ErrCorrupt, err)
		}
	}
	if len(rawFields) > 0 {
		if err := unmarshalStringMap(rawFields, &fs); err != nil {
			return nil, nil, fmt.Errorf("decode stored fields: %w: %w", ErrCorrupt, err)
		}
	}
	return ls, fs, nil
}

// unmarshalStringMap is json.Unmarshal(b, m) for what marshalStringMap
// writes: an object of strings none of which holds an escape. Anything
// else (spaces, escapes, null, not an object) goes to encoding/json.
func unmarshalStringMap[M ~map[string]string](b []byte, m *M) error {
	out, ok := parsePlainStringMap(b)
	if !ok {
		return json.Unmarshal(b, m)
	}
	*m = M(out)
	return nil
}

// parsePlainStringMap parses {"k":"v",...} whose strings are plain
// (plainJSON), with no space anywhere; ok is false for anything else.
func parsePlainStringMap(b []byte) (m map[string]string, ok bool) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, false
	}
	body := b[1 : len(b)-1]
	m = make(map[string]string, bytes.Count(body, []byte(`":"`)))
	// str reads a plain string at the start of body and what follows it.
	str := func() (string, bool) {
		if len(body) == 0 || body[0] != '"' {
			return "", false
		}
		end := bytes.IndexByte(body[1:], '"')
		if end < 0 || !plainJSON(body[1:1+end]) {
			return "", false
		}
		s := string(body[1 : 1+end])
		body = body[end+2:]
		return s, true
	}
	for len(body) > 0 {
		k, ok := str()
		if !ok || len(body) == 0 || body[0] != ':' {
			return nil, false
		}
		body = body[1:]
		v, ok := str()
		if !ok {
			return nil, false
		}
		m[k] = v
		if len(body) > 0 {
			if body[0] != ',' || len(body) == 1 {
				return nil, false
			}
			body = body[1:]
		}
	}
	return m, true
}
