package patch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
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
// equal) exactly, whatever their size.
func numbersEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, okx := canonicalNumber(string(a))
	y, oky := canonicalNumber(string(b))
	return okx && oky && x.neg == y.neg && x.digits == y.digits && x.exp.Cmp(y.exp) == 0
}

// decimal is a number as digits × 10^exp with no leading or trailing
// zeros in digits; zero has empty digits and is never negative.
type decimal struct {
	neg    bool
	digits string
	exp    *big.Int
}

// canonicalNumber parses a JSON number into its canonical decimal form.
func canonicalNumber(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expStr, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	d.exp = new(big.Int)
	if hasExp {
		if _, ok := d.exp.SetString(strings.TrimPrefix(expStr, "+"), 10); !ok {
			return d, false
		}
	}
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return d, false
	}
	d.exp.Sub(d.exp, big.NewInt(int64(len(frac))))
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	d.exp.Add(d.exp, big.NewInt(int64(len(digits)-len(trimmed))))
	d.digits = trimmed
	if d.digits == "" {
		return decimal{exp: new(big.Int)}, true
	}
	return d, true
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
