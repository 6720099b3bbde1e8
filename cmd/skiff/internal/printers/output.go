package printers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/skiffhq/skiff/api"
)

// Output formats of PrintObject and PrintList.
const (
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// ErrUnknownFormat is returned (wrapped) for an output format other than
// FormatJSON and FormatYAML.
var ErrUnknownFormat = errors.New("unknown output format")

// PrintObject writes obj as `-o json` (4-space indent, like kubectl) or
// `-o yaml`, keys sorted as kubectl prints them, with apiVersion and kind
// filled in from obj's type when empty. obj is not modified.
func PrintObject(w io.Writer, obj api.Object, format string) error {
	v, err := generic(obj)
	if err != nil {
		return err
	}
	return encode(w, v, format)
}

// PrintList writes objs wrapped in a kubectl-style List,
// {"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[...]},
// as `skiff get KIND -o json|yaml` does even for zero or one item.
func PrintList(w io.Writer, objs []api.Object, format string) error {
	items := make([]any, 0, len(objs))
	for _, obj := range objs {
		v, err := generic(obj)
		if err != nil {
			return err
		}
		items = append(items, v)
	}
	list := map[string]any{
		"apiVersion": "v1",
		"kind":       "List",
		"metadata":   map[string]any{"resourceVersion": ""},
		"items":      items,
	}
	return encode(w, list, format)
}

// generic converts obj to its JSON data model (maps sort their keys when
// encoded), filling apiVersion and kind from its Go type when empty.
func generic(obj api.Object) (map[string]any, error) {
	if obj == nil {
		return nil, errors.New("print: nil object")
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("print %T: %w", obj, err)
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber() // keep integers exact
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("print %T: %w", obj, err)
	}
	if res, ok := api.ResourceOf(obj); ok {
		if s, _ := m["apiVersion"].(string); s == "" {
			m["apiVersion"] = res.GroupVersion()
		}
		if s, _ := m["kind"].(string); s == "" {
			m["kind"] = res.Kind
		}
	}
	return m, nil
}

func encode(w io.Writer, v any, format string) error {
	var out []byte
	switch format {
	case FormatJSON:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "    ")
		enc.SetEscapeHTML(false) // "<none>" stays readable
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("print json: %w", err)
		}
		out = b.Bytes()
	case FormatYAML:
		var err error
		if out, err = yaml.Marshal(v); err != nil {
			return fmt.Errorf("print yaml: %w", err)
		}
	default:
		return fmt.Errorf("%w %q (want json or yaml)", ErrUnknownFormat, format)
	}
	_, err := w.Write(out)
	return err
}
