package fields

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseError describes why a field selector string could not be parsed.
type ParseError struct {
	// Selector is the complete input that was being parsed.
	Selector string
	// Pos is the 0-based byte offset in Selector where the problem was
	// found.
	Pos int
	// Msg says what is wrong and what was expected.
	Msg string
}

// Error implements the error interface.
func (e *ParseError) Error() string {
	return fmt.Sprintf("fields: invalid selector %q: at position %d: %s", e.Selector, e.Pos, e.Msg)
}

// isSpace reports whether c is whitespace that Parse trims: space, tab, CR
// or LF, as in label selectors.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

func trimSpace(s string) string {
	start, end := 0, len(s)
	for start < end && isSpace(s[start]) {
		start++
	}
	for end > start && isSpace(s[end-1]) {
		end--
	}
	return s[start:end]
}

// Parse parses a field selector: a comma-separated list of terms of the form
// field=value, field==value or field!=value. "==" means the same as "=".
// Whitespace around terms and around the operator is ignored; empty terms
// (as in "a=b,,c=d" or a trailing comma) are errors. The field path must
// consist of ASCII letters, digits, '.', '_' and '-'. In the value, '\', ','
// and '=' must be escaped with a backslash. An empty or all-whitespace input
// yields [Everything].
//
// Errors are of type *[ParseError].
func Parse(s string) (Selector, error) {
	if trimSpace(s) == "" {
		return Everything(), nil
	}
	var reqs []Requirement
	start := 0
	for start <= len(s) {
		end := termEnd(s, start)
		r, err := parseTerm(s, start, end)
		if err != nil {
			return Selector{}, err
		}
		reqs = append(reqs, r)
		start = end + 1
	}
	return newSelector(reqs), nil
}

// termEnd returns the index of the first comma at or after start that is not
// escaped by a backslash, or len(s).
func termEnd(s string, start int) int {
	for i := start; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++ // skip the escaped byte
		case ',':
			return i
		}
	}
	return len(s)
}

// parseTerm parses s[start:end] as one term.
func parseTerm(s string, start, end int) (Requirement, error) {
	fail := func(pos int, format string, args ...any) (Requirement, error) {
		return Requirement{}, &ParseError{Selector: s, Pos: pos, Msg: fmt.Sprintf(format, args...)}
	}
	for start < end && isSpace(s[start]) {
		start++
	}
	for end > start && isSpace(s[end-1]) {
		end--
	}
	term := s[start:end]
	if term == "" {
		return fail(start, `found an empty term, expected field=value, field==value or field!=value`)
	}

	opAt, op, opLen := -1, Operator(""), 0
	for i := 0; i < len(term) && opAt < 0; i++ {
		switch {
		case strings.HasPrefix(term[i:], "!="):
			opAt, op, opLen = i, NotEquals, 2
		case strings.HasPrefix(term[i:], "=="):
			opAt, op, opLen = i, Equals, 2
		case term[i] == '=':
			opAt, op, opLen = i, Equals, 1
		}
	}
	if opAt < 0 {
		return fail(start, `found %q, expected a term field=value, field==value or field!=value`, term)
	}

	field := trimSpace(term[:opAt])
	if err := validateField(field); err != nil {
		return fail(start, "%s", strings.TrimPrefix(err.Error(), "fields: "))
	}

	rawStart := start + opAt + opLen
	for rawStart < end && isSpace(s[rawStart]) {
		rawStart++
	}
	value, badAt, err := unescape(s[rawStart:end])
	if err != nil {
		return fail(rawStart+badAt, "value of field %q: %v", field, err)
	}
	return Requirement{Field: field, Operator: op, Value: value}, nil
}

// EscapeValue escapes a value for use in a field selector string: '\', ','
// and '=' are each preceded by a backslash.
func EscapeValue(s string) string {
	if !strings.ContainsAny(s, `\,=`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 4)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', ',', '=':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// UnescapeValue reverses [EscapeValue]. It returns an error for an unknown
// escape sequence, a trailing lone backslash, or an unescaped ',' or '='.
func UnescapeValue(s string) (string, error) {
	v, _, err := unescape(s)
	if err != nil {
		return "", fmt.Errorf("fields: %w", err)
	}
	return v, nil
}

// unescape is UnescapeValue that also reports the byte offset of a problem.
// It works on bytes, so values that are not valid UTF-8 are kept as they are.
func unescape(s string) (value string, badAt int, err error) {
	if !strings.ContainsAny(s, `\,=`) {
		return s, 0, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 >= len(s) {
				return "", i, fmt.Errorf(`found a trailing "\", expected one of "\\", "\,", "\=" (escape sequences)`)
			}
			switch n := s[i+1]; n {
			case '\\', ',', '=':
				b.WriteByte(n)
				i++
			default:
				_, size := utf8.DecodeRuneInString(s[i+1:])
				return "", i, fmt.Errorf(`found invalid escape sequence %s, expected one of "\\", "\,", "\="`, strconv.Quote(s[i:i+1+size]))
			}
		case ',', '=':
			return "", i, fmt.Errorf(`found unescaped %q, which must be written as "\%c"`, c, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), 0, nil
}
