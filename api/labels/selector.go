package labels

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operator is the relation a [Requirement] imposes between a label key and
// its values.
type Operator string

// The operators of label selectors. The constant values are the names used by
// Kubernetes; the selector string syntax spells GreaterThan and LessThan as
// ">" and "<" and DoesNotExist as a "!" prefix.
const (
	// Equals requires the key to be present with the single given value.
	Equals Operator = "="
	// DoubleEquals is a synonym of Equals; it is kept apart only so that
	// String reproduces the spelling that was parsed.
	DoubleEquals Operator = "=="
	// NotEquals requires the key to be absent or to have a value other than
	// the single given value.
	NotEquals Operator = "!="
	// In requires the key to be present with one of the given values.
	In Operator = "in"
	// NotIn requires the key to be absent or to have none of the given
	// values.
	NotIn Operator = "notin"
	// Exists requires the key to be present, with any value.
	Exists Operator = "exists"
	// DoesNotExist requires the key to be absent.
	DoesNotExist Operator = "!"
	// GreaterThan requires the key to be present with an integer value
	// greater than the single given integer.
	GreaterThan Operator = "gt"
	// LessThan requires the key to be present with an integer value less
	// than the single given integer.
	LessThan Operator = "lt"
)

// Requirement is a single condition on one label key, such as "tier in
// (web,api)". Requirements are built with [NewRequirement] or [Parse], which
// validate them; the zero Requirement is invalid and matches nothing.
// A Requirement is an immutable value and safe to copy.
type Requirement struct {
	key    string
	op     Operator
	values []string // sorted and de-duplicated for In and NotIn
	num    int64    // parsed values[0] for GreaterThan and LessThan
}

// NewRequirement returns a validated Requirement. key must be a valid label
// key (see [IsQualifiedName]) and every value a valid label value (see
// [IsValidLabelValue]). The number of values depends on op: at least one for
// In and NotIn, exactly one for Equals, DoubleEquals and NotEquals, none for
// Exists and DoesNotExist, and exactly one base-10 64-bit integer for
// GreaterThan and LessThan. The error names the offending key or values; on
// error the returned Requirement is the zero value.
//
// vals is copied. For In and NotIn the values are sorted and duplicates
// removed.
func NewRequirement(key string, op Operator, vals []string) (Requirement, error) {
	var errs []string
	if err := validateLabelKey(key); err != nil {
		errs = append(errs, err.Error())
	}
	var num int64
	switch op {
	case In, NotIn:
		if len(vals) == 0 {
			errs = append(errs, fmt.Sprintf("key %q: operator %q requires at least one value", key, op))
		}
	case Equals, DoubleEquals, NotEquals:
		if len(vals) != 1 {
			errs = append(errs, fmt.Sprintf("key %q: operator %q requires exactly one value, got %d", key, op, len(vals)))
		}
	case Exists, DoesNotExist:
		if len(vals) != 0 {
			errs = append(errs, fmt.Sprintf("key %q: operator %q takes no values, got %d", key, op, len(vals)))
		}
	case GreaterThan, LessThan:
		if len(vals) != 1 {
			errs = append(errs, fmt.Sprintf("key %q: operator %q requires exactly one value, got %d", key, op, len(vals)))
		}
		for _, v := range vals {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Sprintf("key %q: operator %q requires an integer value, got %q", key, op, v))
				continue
			}
			num = n
		}
	default:
		errs = append(errs, fmt.Sprintf("key %q: unknown operator %q (supported: =, ==, !=, in, notin, exists, !, gt, lt)", key, op))
	}
	for _, v := range vals {
		if err := validateLabelValue(key, v); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) != 0 {
		return Requirement{}, errors.New("labels: invalid requirement: " + strings.Join(errs, "; "))
	}

	values := slices.Clone(vals)
	if op == In || op == NotIn {
		slices.Sort(values)
		values = slices.Compact(values)
	}
	return Requirement{key: key, op: op, values: values, num: num}, nil
}

// Key returns the label key the requirement applies to.
func (r Requirement) Key() string { return r.key }

// Operator returns the requirement's operator.
func (r Requirement) Operator() Operator { return r.op }

// Values returns a copy of the requirement's values: sorted and unique for In
// and NotIn, a single value for the equality and comparison operators, and
// none for Exists and DoesNotExist.
func (r Requirement) Values() []string { return slices.Clone(r.values) }

// Matches reports whether ls satisfies the requirement. A nil ls is treated
// as an empty label set. NotEquals and NotIn match when the key is absent;
// Equals, DoubleEquals, In, GreaterThan and LessThan do not. GreaterThan and
// LessThan do not match a label value that is not a base-10 64-bit integer.
func (r Requirement) Matches(ls Labels) bool {
	v, has := lookup(ls, r.key)
	switch r.op {
	case Equals, DoubleEquals:
		return has && v == r.values[0]
	case NotEquals:
		return !has || v != r.values[0]
	case In:
		return has && r.hasValue(v)
	case NotIn:
		return !has || !r.hasValue(v)
	case Exists:
		return has
	case DoesNotExist:
		return !has
	case GreaterThan, LessThan:
		if !has {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.op == GreaterThan {
			return n > r.num
		}
		return n < r.num
	default:
		return false
	}
}

// lookup returns the value of key in ls and whether it is present, with a
// single map lookup when ls is a Set. A nil ls is an empty label set.
func lookup(ls Labels, key string) (string, bool) {
	switch ls := ls.(type) {
	case nil:
		return "", false
	case Set:
		v, ok := ls[key]
		return v, ok
	default:
		if !ls.Has(key) {
			return "", false
		}
		return ls.Get(key), true
	}
}

// hasValue reports whether v is one of the (sorted) values of an In or NotIn
// requirement.
func (r Requirement) hasValue(v string) bool {
	if len(r.values) <= 8 {
		return slices.Contains(r.values, v)
	}
	_, found := slices.BinarySearch(r.values, v)
	return found
}

// invalidRequirement is what String renders for the zero Requirement. It is
// deliberately not valid selector syntax, so a selector containing it cannot
// be serialised and parsed back into something that matches more.
const invalidRequirement = "<invalid requirement>"

// String returns the requirement in selector syntax, for example "a=b",
// "a!=b", "a in (x,y)", "a", "!a" or "a>5". [Parse] accepts the result and
// yields an equal requirement.
func (r Requirement) String() string {
	var b strings.Builder
	r.writeTo(&b)
	return b.String()
}

func (r Requirement) writeTo(b *strings.Builder) {
	switch r.op {
	case Exists:
		b.WriteString(r.key)
	case DoesNotExist:
		b.WriteByte('!')
		b.WriteString(r.key)
	case Equals, DoubleEquals, NotEquals:
		b.WriteString(r.key)
		b.WriteString(string(r.op))
		b.WriteString(r.values[0])
	case GreaterThan:
		b.WriteString(r.key)
		b.WriteByte('>')
		b.WriteString(r.values[0])
	case LessThan:
		b.WriteString(r.key)
		b.WriteByte('<')
		b.WriteString(r.values[0])
	case In, NotIn:
		b.WriteString(r.key)
		b.WriteByte(' ')
		b.WriteString(string(r.op))
		b.WriteString(" (")
		b.WriteString(strings.Join(r.values, ","))
		b.WriteByte(')')
	default:
		b.WriteString(invalidRequirement)
	}
}

// equal reports whether r and o are the same requirement.
func (r Requirement) equal(o Requirement) bool {
	return r.key == o.key && r.op == o.op && slices.Equal(r.values, o.values)
}

// compare orders requirements by key, then by their string form, which is
// the canonical order used by [Selector].
func (r Requirement) compare(o Requirement) int {
	if c := strings.Compare(r.key, o.key); c != 0 {
		return c
	}
	return strings.Compare(r.String(), o.String())
}

// Selector is a conjunction of label requirements: it matches a label set
// when every requirement does. Selectors are immutable values; the zero
// Selector is the same as [Everything].
//
// Besides "everything" (no requirements) there is one more special selector,
// [Nothing], which matches no label set at all and cannot be written in the
// selector syntax.
type Selector struct {
	reqs    []Requirement // sorted by compare, without duplicates
	nothing bool
}

// Everything returns the selector that matches every label set, including an
// empty one. It is the zero Selector and the result of Parse("").
func Everything() Selector { return Selector{} }

// Nothing returns the selector that matches no label set. Use it where an
// absent (nil) label selector must select nothing, as opposed to an empty
// selector, which selects everything; this mirrors Kubernetes, where a nil
// LabelSelector means "nothing" in several APIs.
//
// Nothing is not Empty, Add leaves it unchanged, Requirements reports it as
// not selectable, and its String form is "<nothing>", which deliberately
// fails to parse: serialising Nothing and parsing it back must not turn it
// into Everything.
func Nothing() Selector { return Selector{nothing: true} }

// nothingString is the String form of [Nothing].
const nothingString = "<nothing>"

// SelectorFromSet returns the selector that requires every key of ls to be
// present with exactly the given value ("k1=v1,k2=v2"). A nil or empty set
// yields [Everything]. Each key and value is validated and the error names
// every invalid one.
func SelectorFromSet(ls Set) (Selector, error) {
	if err := ls.Validate(); err != nil {
		return Selector{}, fmt.Errorf("labels: invalid label set: %w", err)
	}
	reqs := make([]Requirement, 0, len(ls))
	for k, v := range ls {
		reqs = append(reqs, Requirement{key: k, op: Equals, values: []string{v}})
	}
	return Everything().Add(reqs...), nil
}

// Matches reports whether ls satisfies every requirement of s. A nil ls is
// treated as an empty label set.
func (s Selector) Matches(ls Labels) bool {
	if s.nothing {
		return false
	}
	for _, r := range s.reqs {
		if !r.Matches(ls) {
			return false
		}
	}
	return true
}

// Empty reports whether s has no requirements and therefore matches
// everything. It is false for [Nothing].
func (s Selector) Empty() bool {
	return !s.nothing && len(s.reqs) == 0
}

// IsNothing reports whether s is the [Nothing] selector.
func (s Selector) IsNothing() bool { return s.nothing }

// Requirements returns a copy of the requirements of s in canonical order
// (by key, then by string form). selectable is false for [Nothing], which has
// no requirements yet matches nothing; it is true for every other selector.
func (s Selector) Requirements() (reqs []Requirement, selectable bool) {
	if s.nothing {
		return nil, false
	}
	return slices.Clone(s.reqs), true
}

// Add returns a selector that also requires reqs; s itself is not modified.
// Requirements are kept in canonical order and exact duplicates are dropped.
// Adding to [Nothing] returns Nothing.
func (s Selector) Add(reqs ...Requirement) Selector {
	if s.nothing {
		return s
	}
	if len(reqs) == 0 {
		return s
	}
	out := make([]Requirement, 0, len(s.reqs)+len(reqs))
	out = append(out, s.reqs...)
	out = append(out, reqs...)
	slices.SortStableFunc(out, Requirement.compare)
	out = slices.CompactFunc(out, Requirement.equal)
	return Selector{reqs: out}
}

// RequiresExactMatch reports whether s can only match label sets in which
// key has one particular value, and returns that value. This holds when s has
// an Equals or DoubleEquals requirement on key, or an In requirement with a
// single value. It lets callers use an index on key.
func (s Selector) RequiresExactMatch(key string) (value string, found bool) {
	if s.nothing {
		return "", false
	}
	for _, r := range s.reqs {
		if r.key != key {
			continue
		}
		switch r.op {
		case Equals, DoubleEquals, In:
			if len(r.values) == 1 {
				return r.values[0], true
			}
		}
	}
	return "", false
}

// String returns s in canonical selector syntax: requirements sorted by key
// and joined with ",", for example "app=web,tier in (api,db)". Everything
// renders as "". For any selector built from valid requirements, [Parse]
// accepts the result and yields an equivalent selector with the same String.
// [Nothing] renders as "<nothing>", which Parse rejects.
func (s Selector) String() string {
	if s.nothing {
		return nothingString
	}
	var b strings.Builder
	for i, r := range s.reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		r.writeTo(&b)
	}
	return b.String()
}
