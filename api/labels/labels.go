package labels

import (
	"errors"
	"sort"
	"strings"
)

// Labels is the read-only view of an object's labels that selectors match
// against. [Set] implements it.
type Labels interface {
	// Has reports whether the key is present.
	Has(key string) bool
	// Get returns the value for key, or "" when the key is absent.
	Get(key string) string
}

// Set is a map of label keys to label values. A nil Set is an empty set.
type Set map[string]string

// Has reports whether key is present in ls.
func (ls Set) Has(key string) bool {
	_, ok := ls[key]
	return ok
}

// Get returns the value of key in ls, or "" when key is absent.
func (ls Set) Get(key string) string {
	return ls[key]
}

// String returns the set as "k1=v1,k2=v2" with keys in sorted order. For a
// valid set this is also a selector string that selects exactly the objects
// carrying these labels.
func (ls Set) String() string {
	keys := make([]string, 0, len(ls))
	for k := range ls {
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
		b.WriteString(ls[k])
	}
	return b.String()
}

// Validate returns nil when every key of ls is a valid label key and every
// value a valid label value. Otherwise it returns an error that names each
// offending key or value, in key order.
func (ls Set) Validate() error {
	keys := make([]string, 0, len(ls))
	for k := range ls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		if err := validateLabelKey(k); err != nil {
			errs = append(errs, err)
		}
		if err := validateLabelValue(k, ls[k]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
