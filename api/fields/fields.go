package fields

import (
	"sort"
	"strings"
)

// Set maps field paths, such as "metadata.name" or "spec.nodeName", to the
// values an object has for them. A nil Set is an empty set.
type Set map[string]string

// Has reports whether field is present in fs.
func (fs Set) Has(field string) bool {
	_, ok := fs[field]
	return ok
}

// Get returns the value of field in fs, or "" when field is absent.
func (fs Set) Get(field string) string {
	return fs[field]
}

// String returns the set in selector syntax, "f1=v1,f2=v2", with fields in
// sorted order and values escaped with [EscapeValue].
func (fs Set) String() string {
	keys := make([]string, 0, len(fs))
	for k := range fs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(EscapeValue(fs[k]))
	}
	return b.String()
}
