package patch

import (
	"strings"
	"testing"
)

// TestMergeRFC7386 runs the examples of RFC 7386 appendix A.
func TestMergeRFC7386(t *testing.T) {
	tests := []struct{ doc, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Numbers stay exactly as written.
		{`{"n":1}`, `{"big":12345678901234567890123,"f":1.50,"e":1e400}`, `{"big":12345678901234567890123,"e":1e400,"f":1.50,"n":1}`},
	}
	for _, tt := range tests {
		got, err := Merge([]byte(tt.doc), []byte(tt.patch))
		if err != nil || string(got) != tt.want {
			t.Errorf("Merge(%s, %s) = %s, %v; want %s", tt.doc, tt.patch, got, err, tt.want)
		}
	}
}

func TestMergeErrors(t *testing.T) {
	tests := []struct{ doc, patch, want string }{
		{`{}`, `{"a":`, "malformed merge patch"},
		{`{}`, `{} {}`, "malformed merge patch"},
		{`{`, `{}`, "decode document"},
	}
	for _, tt := range tests {
		got, err := Merge([]byte(tt.doc), []byte(tt.patch))
		if err == nil || got != nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Merge(%s, %s) = %s, %v; want error containing %q", tt.doc, tt.patch, got, err, tt.want)
		}
	}
	if _, err := Merge([]byte(`{}`), []byte(`{"a":`)); !IsPatchError(err) {
		t.Errorf("IsPatchError(%v) = false; want true for a malformed patch", err)
	}
	if _, err := Merge([]byte(`{`), []byte(`{}`)); IsPatchError(err) {
		t.Errorf("IsPatchError(%v) = true; want false for a malformed document", err)
	}
}
