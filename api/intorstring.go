package api

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// IntOrString holds either an integer or a string, as Kubernetes'
// intstr.IntOrString (ports by number or name, "25%").
type IntOrString struct {
	Type   IntOrStringType
	IntVal int32
	StrVal string
}

// IntOrStringType says which field of an IntOrString is set.
type IntOrStringType int

// IntOrString kinds.
const (
	Int IntOrStringType = iota
	String
)

// FromInt returns an IntOrString holding i.
func FromInt(i int32) IntOrString { return IntOrString{Type: Int, IntVal: i} }

// FromString returns an IntOrString holding s.
func FromString(s string) IntOrString { return IntOrString{Type: String, StrVal: s} }

// String returns the value as text.
func (v IntOrString) String() string {
	if v.Type == String {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON implements json.Marshaler.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.Type == String {
		return json.Marshal(v.StrVal)
	}
	return strconv.AppendInt(nil, int64(v.IntVal), 10), nil
}

// UnmarshalJSON implements json.Unmarshaler: a JSON string or a 32-bit integer.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.Type = String
		v.IntVal = 0
		return json.Unmarshal(b, &v.StrVal)
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		return fmt.Errorf("must be a 32-bit integer or a string, not %s", truncate(string(b), 40))
	}
	*v = IntOrString{Type: Int, IntVal: int32(n)}
	return nil
}

// ScaledValue resolves v against total: an integer as is, "N%" as N% of
// total, rounded up when roundUp and down otherwise.
func (v IntOrString) ScaledValue(total int, roundUp bool) (int, error) {
	if v.Type == Int {
		return int(v.IntVal), nil
	}
	s, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("invalid value %q: must be an integer or a percentage", v.StrVal)
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 0 {
		return 0, fmt.Errorf("invalid value %q: must be an integer or a percentage", v.StrVal)
	}
	f := float64(p) * float64(total) / 100
	if roundUp {
		return int(math.Ceil(f)), nil
	}
	return int(math.Floor(f)), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func quote(s string) string { return strconv.Quote(truncate(s, 80)) }
