package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
)

// Error is a patch that cannot be applied: malformed JSON, an unknown
// operation or directive, a missing path, a failed test. Its message names
// the problem and where it is. Errors that are not *Error concern the
// document, not the patch.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

func patchErr(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...)}
}

// IsPatchError reports whether err is (or wraps) an *Error.
func IsPatchError(err error) bool {
	var pe *Error
	return errors.As(err, &pe)
}

// decode parses one JSON value keeping numbers exact; trailing data is an
// error.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b[d.InputOffset():])) > 0 {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return v, nil
}

// decodeDoc decodes the document being patched.
func decodeDoc(doc []byte) (any, error) {
	v, err := decode(doc)
	if err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	return v, nil
}

// encode marshals v without HTML escaping and without a trailing newline.
// Map keys come out sorted, so equal values encode to equal bytes.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, fmt.Errorf("encode patched document: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// deepCopy copies a decoded JSON value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	default:
		return v
	}
}

// equal reports whether two decoded JSON values are equal as JSON: objects
// by key set and values, arrays element by element, numbers by value.
func equal(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numbersEqual(x, y)
	default:
		return a == b
	}
}

// numbersEqual compares two JSON numbers by value (1, 1.0 and 1e0 are
// equal) without losing precision on large integers.
func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	if x, err := strconv.ParseInt(string(a), 10, 64); err == nil {
		if y, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return x == y
		}
	}
	x, _, errx := big.ParseFloat(string(a), 10, 256, big.ToNearestEven)
	y, _, erry := big.ParseFloat(string(b), 10, 256, big.ToNearestEven)
	if errx != nil || erry != nil {
		return false
	}
	return x.Cmp(y) == 0
}

// isPrimitive reports whether v is a JSON scalar (or null).
func isPrimitive(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// kindName names a decoded value's JSON type for error messages.
func kindName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
