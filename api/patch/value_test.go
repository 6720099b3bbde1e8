package patch

import (
	"encoding/json"
	"testing"
)

func TestNumbersEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"1", "1", true},
		{"1", "1.0", true},
		{"1", "1e0", true},
		{"100", "1E2", true},
		{"100", "1e+2", true},
		{"0.5", "5e-1", true},
		{"0", "-0", true},
		{"0", "0.000e10", true},
		{"1", "2", false},
		{"-1", "1", false},
		{"9007199254740993", "9007199254740992", false},
		{"12345678901234567890123", "12345678901234567890123.0", true},
		{"1e999999999", "1e999999998", false},
		{"1e-999999999", "0", false},
		{"1e99999999999999999999", "10e99999999999999999998", true},
	}
	for _, tt := range tests {
		if got := numbersEqual(json.Number(tt.a), json.Number(tt.b)); got != tt.want {
			t.Errorf("numbersEqual(%s, %s) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
