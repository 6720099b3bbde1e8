package fields

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Operator is the comparison a [Requirement] makes.
type Operator string

// The operators of field selectors. The syntax also accepts "==", which
// [Parse] normalises to Equals.
const (
	// Equals requires the field to have the given value.
	Equals Operator = "="
	// NotEquals requires the field to have a value other than the given one.
	NotEquals Operator = "!="
)

// Requirement is one term of a field selector: Field Operator Value.
type Requirement struct {
	// Field is the field path, for example "spec.nodeName".
	Field string
	// Operator is Equals or NotEquals.
	Operator Operator
	// Value is the unescaped value compared with the field.
	Value string
}

// Matches reports whether fs satisfies r. A field missing from fs is treated
// as having the empty value.
func (r Requirement) Matches(fs Set) bool {
	switch r.Operator {
	case Equals:
		return fs[r.Field] == r.Value
	case NotEquals:
		return fs[r.Field] != r.Value
	default:
		return false
	}
}

// String returns r in selector syntax with the value escaped, for example
// "spec.nodeName=node-1".
func (r Requirement) String() string {
	return r.Field + string(r.Operator) + EscapeValue(r.Value)
}

// Validate returns an error when r cannot be expressed in the selector
// syntax: the field must be a non-empty path of ASCII letters, digits, '.',
// '_' and '-'; the operator must be Equals or NotEquals; and the value must
// not begin or end with whitespace (which Parse trims).
func (r Requirement) Validate() error {
	if err := validateField(r.Field); err != nil {
		return err
	}
	if r.Operator != Equals && r.Operator != NotEquals {
		return fmt.Errorf("fields: field %q: unsupported operator %q (supported: \"=\", \"==\", \"!=\")", r.Field, r.Operator)
	}
	if r.Value != trimSpace(r.Value) {
		return fmt.Errorf("fields: field %q: value %q must not begin or end with whitespace", r.Field, r.Value)
	}
	return nil
}

// validateField checks the syntax of a field path.
func validateField(field string) error {
	if field == "" {
		return errors.New("fields: field path must be non-empty")
	}
	for i := 0; i < len(field); i++ {
		c := field[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("fields: invalid field path %q: must consist of ASCII letters, digits, '.', '_' or '-' (e.g. 'spec.nodeName')", field)
		}
	}
	return nil
}

// Selector is a conjunction of field requirements: it matches a [Set] when
// every requirement does. Selectors are immutable values; the zero Selector
// is the same as [Everything].
type Selector struct {
	reqs []Requirement // sorted by compare, without duplicates
}

// Everything returns the selector that matches every field set. It is the
// zero Selector and the result of Parse("").
func Everything() Selector { return Selector{} }

// NewSelector returns the selector requiring all of reqs, after validating
// each with [Requirement.Validate].
func NewSelector(reqs ...Requirement) (Selector, error) {
	var errs []error
	for _, r := range reqs {
		if err := r.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) != 0 {
		return Selector{}, errors.Join(errs...)
	}
	return newSelector(slices.Clone(reqs)), nil
}

// SelectorFromSet returns the selector requiring every field of fs to equal
// its value ("f1=v1,f2=v2"). A nil or empty set yields [Everything]. The error
// names every field path or value that the selector syntax cannot express.
func SelectorFromSet(fs Set) (Selector, error) {
	reqs := make([]Requirement, 0, len(fs))
	for f, v := range fs {
		reqs = append(reqs, Requirement{Field: f, Operator: Equals, Value: v})
	}
	slices.SortFunc(reqs, compare)
	return NewSelector(reqs...)
}

// newSelector takes ownership of reqs, which must be valid.
func newSelector(reqs []Requirement) Selector {
	if len(reqs) == 0 {
		return Selector{}
	}
	slices.SortFunc(reqs, compare)
	return Selector{reqs: slices.Compact(reqs)}
}

// compare orders requirements by field, operator and value: the canonical
// order of [Selector.String].
func compare(a, b Requirement) int {
	if c := strings.Compare(a.Field, b.Field); c != 0 {
		return c
	}
	if c := strings.Compare(string(a.Operator), string(b.Operator)); c != 0 {
		return c
	}
	return strings.Compare(a.Value, b.Value)
}

// Matches reports whether fs satisfies every requirement of s.
func (s Selector) Matches(fs Set) bool {
	for _, r := range s.reqs {
		if !r.Matches(fs) {
			return false
		}
	}
	return true
}

// Empty reports whether s has no requirements and therefore matches
// everything.
func (s Selector) Empty() bool { return len(s.reqs) == 0 }

// Requirements returns a copy of the requirements of s in canonical order
// (by field, operator, value), so that a server can check that only
// supported fields and operators are used.
func (s Selector) Requirements() []Requirement { return slices.Clone(s.reqs) }

// RequiresExactMatch reports whether s can only match sets in which field has
// one particular value, and returns it. This holds when s has an Equals
// requirement on field; it lets a server use an index, for example on
// "spec.nodeName".
func (s Selector) RequiresExactMatch(field string) (value string, found bool) {
	for _, r := range s.reqs {
		if r.Field == field && r.Operator == Equals {
			return r.Value, true
		}
	}
	return "", false
}

// String returns s in canonical selector syntax: terms sorted by field,
// operator and value, values escaped, joined with ",". Everything renders
// as "". [Parse] accepts the result and returns an equal selector.
func (s Selector) String() string {
	var b strings.Builder
	for i, r := range s.reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.Field)
		b.WriteString(string(r.Operator))
		b.WriteString(EscapeValue(r.Value))
	}
	return b.String()
}
