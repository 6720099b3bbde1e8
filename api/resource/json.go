package resource

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// MarshalJSON implements json.Marshaler: q is encoded as a JSON string
// holding its canonical form, such as "500m".
func (q Quantity) MarshalJSON() ([]byte, error) {
	s := q.String() // only digits, letters, '-' and '.': nothing to escape
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// UnmarshalJSON implements json.Unmarshaler. It accepts a JSON string
// holding a quantity ("100m"), a JSON number (1, 0.5, 1e3), read as the
// quantity with the same text, and null, which sets q to zero. As in
// Kubernetes, whitespace around the quantity inside a JSON string is
// ignored. On error q is left unchanged.
func (q *Quantity) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*q = Quantity{}
		return nil
	}
	var text string
	switch {
	case len(data) >= 2 && data[0] == '"' && plainString(data[1:len(data)-1]) && data[len(data)-1] == '"':
		// What every client and the store send: nothing escaped, so
		// the text is what the quotes hold (encoding/json took a tenth
		// of the allocations of decoding a pod's resources for it).
		text = strings.TrimSpace(string(data[1 : len(data)-1]))
	case len(data) > 0 && data[0] == '"':
		if err := json.Unmarshal(data, &text); err != nil {
			return fmt.Errorf("invalid quantity %s: %w", truncate(string(data)), err)
		}
		text = strings.TrimSpace(text)
	case len(data) > 0 && (data[0] == '-' || isDigit(data[0])):
		if !json.Valid(data) {
			return fmt.Errorf("invalid quantity %s: not a valid JSON number", truncate(string(data)))
		}
		text = string(data)
	default:
		return fmt.Errorf("invalid quantity %s: must be a JSON string or number", truncate(string(data)))
	}
	parsed, err := Parse(text)
	if err != nil {
		return err
	}
	*q = parsed
	return nil
}

// plainString reports whether b is the inside of a JSON string that
// needs no unescaping: printable ASCII without a quote or a backslash.
func plainString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
