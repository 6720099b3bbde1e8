package patch

import (
	"strings"
	"testing"
)

// TestJSONPatchRFC6902 runs the examples of RFC 6902 appendix A, plus
// cases for pointer escaping, bounds and atomicity.
func TestJSONPatchRFC6902(t *testing.T) {
	tests := []struct {
		name, doc, patch, want string
		wantErr                string // substring; "" means success
	}{
		{"A.1 add member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux"}]`, `{"baz":"qux","foo":"bar"}`, ""},
		{"A.2 add element", `{"foo":["bar","baz"]}`, `[{"op":"add","path":"/foo/1","value":"qux"}]`, `{"foo":["bar","qux","baz"]}`, ""},
		{"A.3 remove member", `{"baz":"qux","foo":"bar"}`, `[{"op":"remove","path":"/baz"}]`, `{"foo":"bar"}`, ""},
		{"A.4 remove element", `{"foo":["bar","qux","baz"]}`, `[{"op":"remove","path":"/foo/1"}]`, `{"foo":["bar","baz"]}`, ""},
		{"A.5 replace", `{"baz":"qux","foo":"bar"}`, `[{"op":"replace","path":"/baz","value":"boo"}]`, `{"baz":"boo","foo":"bar"}`, ""},
		{"A.6 move member", `{"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}`, `[{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]`, `{"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}`, ""},
		{"A.7 move element", `{"foo":["all","grass","cows","eat"]}`, `[{"op":"move","from":"/foo/1","path":"/foo/3"}]`, `{"foo":["all","cows","eat","grass"]}`, ""},
		{"A.8 test success", `{"baz":"qux","foo":["a",2,"c"]}`, `[{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]`, `{"baz":"qux","foo":["a",2,"c"]}`, ""},
		{"A.9 test failure", `{"baz":"qux"}`, `[{"op":"test","path":"/baz","value":"bar"}]`, "", `operation 0 (test "/baz"): test failed`},
		{"A.10 add nested", `{"foo":"bar"}`, `[{"op":"add","path":"/child","value":{"grandchild":{}}}]`, `{"child":{"grandchild":{}},"foo":"bar"}`, ""},
		{"A.11 extra members ignored", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux","xyz":123}]`, `{"baz":"qux","foo":"bar"}`, ""},
		{"A.12 add to missing parent", `{"foo":"bar"}`, `[{"op":"add","path":"/baz/bat","value":"qux"}]`, "", `operation 0 (add "/baz/bat"): path not found`},
		{"A.13 duplicate op member", `{"foo":"bar"}`, `[{"op":"add","path":"/baz","value":"qux","op":"remove"}]`, "", "path not found"},
		{"A.14 escape order", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":10}]`, `{"/":9,"~1":10}`, ""},
		{"A.15 string is not number", `{"/":9,"~1":10}`, `[{"op":"test","path":"/~01","value":"10"}]`, "", "test failed"},
		{"A.16 add array value", `{"foo":["bar"]}`, `[{"op":"add","path":"/foo/-","value":["abc","def"]}]`, `{"foo":["bar",["abc","def"]]}`, ""},

		{"escape ~1", `{"a/b":1}`, `[{"op":"replace","path":"/a~1b","value":2}]`, `{"a/b":2}`, ""},
		{"bad escape", `{"a":1}`, `[{"op":"remove","path":"/a~2"}]`, "", "bad escape"},
		{"pointer without slash", `{"a":1}`, `[{"op":"remove","path":"a"}]`, "", `must be empty or start with "/"`},
		{"add at end index", `{"a":[1]}`, `[{"op":"add","path":"/a/1","value":2}]`, `{"a":[1,2]}`, ""},
		{"add past end", `{"a":[1]}`, `[{"op":"add","path":"/a/2","value":2}]`, "", "out of bounds"},
		{"remove past end", `{"a":[1]}`, `[{"op":"remove","path":"/a/1"}]`, "", "out of bounds"},
		{"leading zero index", `{"a":[1,2]}`, `[{"op":"remove","path":"/a/01"}]`, "", "bad array index"},
		{"negative index", `{"a":[1,2]}`, `[{"op":"remove","path":"/a/-1"}]`, "", "bad array index"},
		{"dash only for add", `{"a":[1,2]}`, `[{"op":"replace","path":"/a/-","value":0}]`, "", `"-"`},
		{"replace missing", `{"a":1}`, `[{"op":"replace","path":"/b","value":0}]`, "", "path not found"},
		{"replace root", `{"a":1}`, `[{"op":"replace","path":"","value":[1]}]`, `[1]`, ""},
		{"add root", `{"a":1}`, `[{"op":"add","path":"","value":{"b":2}}]`, `{"b":2}`, ""},
		{"remove root", `{"a":1}`, `[{"op":"remove","path":""}]`, "", "whole document"},
		{"move into own child", `{"a":{"b":{}}}`, `[{"op":"move","from":"/a","path":"/a/b/c"}]`, "", "own child"},
		{"move onto itself", `{"a":{"b":1}}`, `[{"op":"move","from":"/a","path":"/a"}]`, `{"a":{"b":1}}`, ""},
		{"copy is deep", `{"a":{"b":1}}`, `[{"op":"copy","from":"/a","path":"/c"},{"op":"replace","path":"/c/b","value":2}]`, `{"a":{"b":1},"c":{"b":2}}`, ""},
		{"copy missing", `{"a":1}`, `[{"op":"copy","from":"/x","path":"/c"}]`, "", "from: path not found"},
		{"test numbers by value", `{"a":1.0,"b":100}`, `[{"op":"test","path":"/a","value":1},{"op":"test","path":"/b","value":1e2}]`, `{"a":1.0,"b":100}`, ""},
		{"test null", `{"a":null}`, `[{"op":"test","path":"/a","value":null}]`, `{"a":null}`, ""},
		{"test object", `{"a":{"x":[1,{"y":true}]}}`, `[{"op":"test","path":"/a","value":{"x":[1,{"y":true}]}}]`, `{"a":{"x":[1,{"y":true}]}}`, ""},
		{"test into scalar", `{"a":1}`, `[{"op":"test","path":"/a/b","value":1}]`, "", "path not found"},
		{"atomic: later failure", `{"a":1}`, `[{"op":"add","path":"/b","value":2},{"op":"test","path":"/a","value":3}]`, "", `operation 1 (test "/a")`},
		{"big numbers exact", `{"a":12345678901234567890}`, `[{"op":"add","path":"/b","value":0.10000000000000000001}]`, `{"a":12345678901234567890,"b":0.10000000000000000001}`, ""},
		{"missing value", `{}`, `[{"op":"add","path":"/a"}]`, "", `missing "value"`},
		{"null value is a value", `{}`, `[{"op":"add","path":"/a","value":null}]`, `{"a":null}`, ""},
		{"missing from", `{}`, `[{"op":"move","path":"/a"}]`, "", `"from"`},
		{"unknown op", `{}`, `[{"op":"frob","path":"/a"}]`, "", `unknown op "frob"`},
		{"missing op", `{}`, `[{"path":"/a"}]`, "", `"op"`},
		{"missing path", `{}`, `[{"op":"remove"}]`, "", `"path"`},
		{"not an array", `{}`, `{"op":"remove","path":"/a"}`, "", "must be an array"},
		{"op not an object", `{}`, `[1]`, "", "operation 0: must be an object"},
		{"malformed", `{}`, `[{"op":`, "", "malformed JSON patch"},
	}
	for _, tt := range tests {
		got, err := JSON([]byte(tt.doc), []byte(tt.patch))
		if tt.wantErr != "" {
			if err == nil || got != nil || !strings.Contains(err.Error(), tt.wantErr) || !IsPatchError(err) {
				t.Errorf("%s: JSON(%s, %s) = %s, %v; want a patch error containing %q", tt.name, tt.doc, tt.patch, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: JSON(%s, %s) = %s, %v; want %s", tt.name, tt.doc, tt.patch, got, err, tt.want)
		}
	}
}
