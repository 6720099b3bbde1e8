package resource

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestMarshalJSON(t *testing.T) {
	tests := []struct {
		q    Quantity
		want string
	}{
		{Quantity{}, `"0"`},
		{MustParse("0.5"), `"500m"`},
		{MustParse("1.5Gi"), `"1536Mi"`},
		{MustParse("-1e3"), `"-1e3"`},
		{MustParse("123456789012345678901234567890"), `"123456789012345678901234567890"`},
		{NewMilliQuantity(1500, DecimalSI), `"1500m"`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.q)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(%v) = %s, %v; want %s", tt.q, b, err, tt.want)
		}
		b, err = json.Marshal(&tt.q)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(&%v) = %s, %v; want %s", tt.q, b, err, tt.want)
		}
	}
}

func TestUnmarshalJSON(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		format Format
	}{
		{`"100m"`, "100m", DecimalSI},
		{`"1.5Gi"`, "1536Mi", BinarySI},
		{`"1e3"`, "1e3", DecimalExponent},
		{`"\u0031Ki"`, "1Ki", BinarySI},
		// Numbers are read as the quantity with the same text.
		{`1`, "1", DecimalSI},
		{`0.5`, "500m", DecimalSI},
		{`-1`, "-1", DecimalSI},
		{`1e3`, "1e3", DecimalExponent},
		{`1.5E-3`, "1500e-6", DecimalExponent},
		{`0`, "0", DecimalSI},
		{`10`, "10", DecimalSI},
		// Whitespace around the value, and inside a string, as Kubernetes
		// allows (TestJSONWhitespace there).
		{` 1`, "1", DecimalSI},
		{`1 `, "1", DecimalSI},
		{` -1`, "-1", DecimalSI},
		{`" 1"`, "1", DecimalSI},
		{`"1 "`, "1", DecimalSI},
		{`null`, "0", ""},
	}
	for _, tt := range tests {
		q := MustParse("7Gi") // must be fully overwritten
		if err := q.UnmarshalJSON([]byte(tt.in)); err != nil {
			t.Errorf("UnmarshalJSON(%s) = error %v; want %q", tt.in, err, tt.want)
			continue
		}
		if got := q.String(); got != tt.want || q.Format != tt.format {
			t.Errorf("UnmarshalJSON(%s) = %q (%v); want %q (%v)", tt.in, got, q.Format, tt.want, tt.format)
		}
	}
}

func TestUnmarshalJSONErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // substring of the error
	}{
		{``, "must be a JSON string or number"},
		{`true`, "must be a JSON string or number"},
		{`{}`, "must be a JSON string or number"},
		{`[]`, "must be a JSON string or number"},
		{`"abc"`, `invalid quantity "abc"`},
		{`""`, `invalid quantity "": empty string`},
		{`"1 2"`, `invalid quantity "1 2"`},
		{`"1Ki5"`, "unable to parse quantity's suffix"},
		{`"1e1000"`, "quantity out of range"},
		{`1e1000`, "quantity out of range"},
		{`"100m`, "invalid quantity"},
		{`"\x"`, "invalid quantity"},
		{`01`, "not a valid JSON number"},
		{`1.`, "not a valid JSON number"},
		{`-`, "not a valid JSON number"},
		{`1 2`, "not a valid JSON number"},
		{`"1" "2"`, "invalid quantity"},
	}
	for _, tt := range tests {
		q := MustParse("7Gi")
		err := q.UnmarshalJSON([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("UnmarshalJSON(%s) = error %v; want one containing %q", tt.in, err, tt.want)
		}
		if q.String() != "7Gi" {
			t.Errorf("failed UnmarshalJSON(%s) changed the quantity to %q", tt.in, q.String())
		}
	}
	var q Quantity
	if err := q.UnmarshalJSON([]byte(`"1e1000"`)); !errors.Is(err, ErrRange) {
		t.Errorf("UnmarshalJSON(\"1e1000\") = %v; want an error wrapping ErrRange", err)
	}
}

func TestJSONStruct(t *testing.T) {
	type limits struct {
		CPU    Quantity            `json:"cpu"`
		Memory *Quantity           `json:"memory,omitempty"`
		Opt    Quantity            `json:"opt,omitzero"`
		List   map[string]Quantity `json:"list"`
	}
	in := `{"cpu":0.25,"memory":"1.5Gi","list":{"a":"1000","b":2e3,"c":null}}`
	var l limits
	if err := json.Unmarshal([]byte(in), &l); err != nil {
		t.Fatalf("json.Unmarshal(%s) = %v", in, err)
	}
	if l.CPU.String() != "250m" || l.Memory.String() != "1536Mi" || l.List["a"].String() != "1k" ||
		l.List["b"].String() != "2e3" || !l.List["c"].IsZero() {
		t.Errorf("json.Unmarshal(%s) = %+v", in, l)
	}
	out, err := json.Marshal(l)
	want := `{"cpu":"250m","memory":"1536Mi","list":{"a":"1k","b":"2e3","c":"0"}}`
	if err != nil || string(out) != want {
		t.Errorf("json.Marshal = %s, %v; want %s", out, err, want)
	}
	err = json.Unmarshal([]byte(`{"cpu":"lots"}`), &l)
	if err == nil || !strings.Contains(err.Error(), `invalid quantity "lots"`) {
		t.Errorf("json.Unmarshal of a bad quantity = %v; want an error naming it", err)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	for _, tt := range parseTests {
		q := MustParse(tt.in)
		b, err := json.Marshal(q)
		if err != nil {
			t.Errorf("json.Marshal(Parse(%q)) = error %v", tt.in, err)
			continue
		}
		var back Quantity
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("json.Unmarshal(%s) = error %v", b, err)
			continue
		}
		back.Format = q.Format // JSON carries the value; see String on formats
		if back.Cmp(q) != 0 || back.String() != q.String() {
			t.Errorf("JSON round trip of %q gave %q; want %q", tt.in, back.String(), q.String())
		}
	}
}
