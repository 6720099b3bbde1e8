package api

import (
	"fmt"
	"strconv"
	"strings"
)

// FieldErrorType classifies a field error; the names match Kubernetes'
// field.ErrorType so kubectl shows familiar messages.
type FieldErrorType string

// Field error types.
const (
	FieldValueRequired     FieldErrorType = "ValueRequired"
	FieldValueInvalid      FieldErrorType = "ValueInvalid"
	FieldValueDuplicate    FieldErrorType = "ValueDuplicate"
	FieldValueNotSupported FieldErrorType = "ValueNotSupported"
	FieldValueForbidden    FieldErrorType = "ValueForbidden"
	FieldValueTooLong      FieldErrorType = "ValueTooLong"
	FieldValueTooMany      FieldErrorType = "FieldValueTooMany"
)

var fieldErrorText = map[FieldErrorType]string{
	FieldValueRequired:     "Required value",
	FieldValueInvalid:      "Invalid value",
	FieldValueDuplicate:    "Duplicate value",
	FieldValueNotSupported: "Unsupported value",
	FieldValueForbidden:    "Forbidden",
	FieldValueTooLong:      "Too long",
	FieldValueTooMany:      "Too many",
}

// FieldError is one rule broken by one field, named by its JSON path
// ("spec.containers[0].image").
type FieldError struct {
	Field    string
	Type     FieldErrorType
	BadValue any // shown for Invalid/Duplicate/NotSupported; nil to omit
	Detail   string
}

// Message is the error without the field path, e.g. `Required value` or
// `Invalid value: "Foo": must be lowercase`.
func (e *FieldError) Message() string {
	var b strings.Builder
	b.WriteString(fieldErrorText[e.Type])
	switch e.Type {
	case FieldValueInvalid, FieldValueDuplicate, FieldValueNotSupported, FieldValueTooMany:
		if e.BadValue != nil {
			b.WriteString(": ")
			switch v := e.BadValue.(type) {
			case string:
				b.WriteString(quote(v))
			default:
				fmt.Fprintf(&b, "%v", v)
			}
		}
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Error implements error: "<field>: <message>".
func (e *FieldError) Error() string { return e.Field + ": " + e.Message() }

// FieldErrors is every fault found in one object; nil when it is valid.
type FieldErrors []*FieldError

// Error implements error.
func (l FieldErrors) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, ", ")
}

// Path is a field path under construction. The zero value is the root.
// Paths are immutable: Child and Index return new paths.
type Path struct {
	s string
}

// NewPath returns the path of a top-level field.
func NewPath(name string, more ...string) Path {
	p := Path{s: name}
	for _, m := range more {
		p = p.Child(m)
	}
	return p
}

// Child returns the path of field name under p.
func (p Path) Child(name string) Path {
	if p.s == "" {
		return Path{s: name}
	}
	return Path{s: p.s + "." + name}
}

// Index returns the path of element i of the list at p.
func (p Path) Index(i int) Path { return Path{s: p.s + "[" + strconv.Itoa(i) + "]"} }

// Key returns the path of key k of the map at p.
func (p Path) Key(k string) Path { return Path{s: p.s + "[" + k + "]"} }

// String returns the path as text.
func (p Path) String() string { return p.s }

// Required reports a missing value at p.
func Required(p Path, detail string) *FieldError {
	return &FieldError{Field: p.s, Type: FieldValueRequired, Detail: detail}
}

// Invalid reports a value at p that breaks a rule.
func Invalid(p Path, value any, detail string) *FieldError {
	return &FieldError{Field: p.s, Type: FieldValueInvalid, BadValue: value, Detail: detail}
}

// Duplicate reports a value at p that must be unique.
func Duplicate(p Path, value any) *FieldError {
	return &FieldError{Field: p.s, Type: FieldValueDuplicate, BadValue: value}
}

// NotSupported reports a value at p outside the allowed set.
func NotSupported(p Path, value any, allowed []string) *FieldError {
	d := ""
	if len(allowed) > 0 {
		q := make([]string, len(allowed))
		for i, a := range allowed {
			q[i] = strconv.Quote(a)
		}
		d = "supported values: " + strings.Join(q, ", ")
	}
	return &FieldError{Field: p.s, Type: FieldValueNotSupported, BadValue: value, Detail: d}
}

// Forbidden reports a field at p that may not be set or changed.
func Forbidden(p Path, detail string) *FieldError {
	return &FieldError{Field: p.s, Type: FieldValueForbidden, Detail: detail}
}

// TooLong reports a value at p longer than max.
func TooLong(p Path, max int) *FieldError {
	return &FieldError{Field: p.s, Type: FieldValueTooLong, Detail: fmt.Sprintf("must have at most %d bytes", max)}
}

// TooMany reports a list at p with actual items, more than max.
func TooMany(p Path, actual, max int) *FieldError {
	return &FieldError{Field: p.s, Type: FieldValueTooMany, BadValue: actual, Detail: fmt.Sprintf("must have at most %d items", max)}
}
