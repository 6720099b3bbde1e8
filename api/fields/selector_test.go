package fields

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	s := Set{"metadata.name": "a,b", "spec.nodeName": "n1"}
	if !s.Has("spec.nodeName") || s.Has("status.phase") {
		t.Errorf("Has: got %v, %v; want true, false", s.Has("spec.nodeName"), s.Has("status.phase"))
	}
	if got := s.Get("spec.nodeName"); got != "n1" {
		t.Errorf("Get = %q; want %q", got, "n1")
	}
	if got, want := s.String(), `metadata.name=a\,b,spec.nodeName=n1`; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	sel, err := Parse(s.String())
	if err != nil || !sel.Matches(s) {
		t.Errorf("Parse(%q) = %v, %v; want a selector matching the set", s.String(), sel, err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []Requirement
	}{
		{"", nil},
		{"  \t\n", nil},
		{"a=b", []Requirement{{"a", Equals, "b"}}},
		{"a==b", []Requirement{{"a", Equals, "b"}}},
		{"a!=b", []Requirement{{"a", NotEquals, "b"}}},
		{"a=", []Requirement{{"a", Equals, ""}}},
		{"a!=", []Requirement{{"a", NotEquals, ""}}},
		{" a = b ", []Requirement{{"a", Equals, "b"}}},
		{" a = b , c != d ", []Requirement{{"a", Equals, "b"}, {"c", NotEquals, "d"}}},
		{"\ta\t==\tb\n", []Requirement{{"a", Equals, "b"}}},
		{"a=b c", []Requirement{{"a", Equals, "b c"}}},
		{"c=d,a=b", []Requirement{{"a", Equals, "b"}, {"c", Equals, "d"}}},
		{"a=b,a=b", []Requirement{{"a", Equals, "b"}}},
		{"a=x,a!=y", []Requirement{{"a", NotEquals, "y"}, {"a", Equals, "x"}}},
		{"metadata.name=foo,metadata.namespace=bar,spec.nodeName=n-1,status.phase=Running",
			[]Requirement{
				{"metadata.name", Equals, "foo"},
				{"metadata.namespace", Equals, "bar"},
				{"spec.nodeName", Equals, "n-1"},
				{"status.phase", Equals, "Running"},
			}},
		// Escaping.
		{`a=b\,c`, []Requirement{{"a", Equals, "b,c"}}},
		{`a=b\=c`, []Requirement{{"a", Equals, "b=c"}}},
		{`a=b\\c`, []Requirement{{"a", Equals, `b\c`}}},
		{`a=\\`, []Requirement{{"a", Equals, `\`}}},
		{`a=\\,b=c`, []Requirement{{"a", Equals, `\`}, {"b", Equals, "c"}}},
		{`a=\,,b=\=`, []Requirement{{"a", Equals, ","}, {"b", Equals, "="}}},
		{`a!=\=\,\\`, []Requirement{{"a", NotEquals, `=,\`}}},
		{`a==\=`, []Requirement{{"a", Equals, "="}}},
		// Characters that need no escaping.
		{"a=!b", []Requirement{{"a", Equals, "!b"}}},
		{"a!=!", []Requirement{{"a", NotEquals, "!"}}},
		{"a=x/y:z (1)", []Requirement{{"a", Equals, "x/y:z (1)"}}},
		{"a=ünï", []Requirement{{"a", Equals, "ünï"}}},
		{"a=\xff", []Requirement{{"a", Equals, "\xff"}}},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want %v", tt.in, err, tt.want)
			continue
		}
		if got := sel.Requirements(); !slices.Equal(got, tt.want) {
			t.Errorf("Parse(%q) = %v; want %v", tt.in, got, tt.want)
		}
		if sel.Empty() != (len(tt.want) == 0) {
			t.Errorf("Parse(%q).Empty() = %v; want %v", tt.in, sel.Empty(), len(tt.want) == 0)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in      string
		pos     int
		wantMsg string
	}{
		{"a", 0, `found "a", expected a term field=value, field==value or field!=value`},
		{"a=b,c", 4, `found "c", expected a term`},
		{"a<b", 0, `found "a<b", expected a term`},
		{"a in (b)", 0, `expected a term`},
		{"=b", 0, `field path must be non-empty`},
		{" =b", 1, `field path must be non-empty`},
		{"!=b", 0, `field path must be non-empty`},
		{"a b=c", 0, `invalid field path "a b": must consist of ASCII letters, digits, '.', '_' or '-'`},
		{"a!b=c", 0, `invalid field path "a!b"`},
		{`a\,b=c`, 0, `invalid field path "a\\,b"`},
		{"a=b=c", 3, `value of field "a": found unescaped '=', which must be written as "\="`},
		{"a===b", 3, `found unescaped '='`},
		{"a!==b", 3, `found unescaped '='`},
		{`a=b\`, 3, `value of field "a": found a trailing "\"`},
		{`a=b\ `, 3, `found a trailing "\"`},
		{`a=b\n`, 3, `found invalid escape sequence "\\n", expected one of "\\", "\,", "\="`},
		{`a=\é`, 2, `found invalid escape sequence "\\é"`},
		{"a=b,", 4, `found an empty term`},
		{",a=b", 0, `found an empty term`},
		{"a=b, ,c=d", 5, `found an empty term`},
		{"a=b,,c=d", 4, `found an empty term`},
		{",", 0, `found an empty term`},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v; want error containing %q", tt.in, sel.Requirements(), tt.wantMsg)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error %v is %T; want *ParseError", tt.in, err, err)
			continue
		}
		if !strings.Contains(pe.Msg, tt.wantMsg) {
			t.Errorf("Parse(%q) = %v; want message containing %q", tt.in, err, tt.wantMsg)
		}
		if pe.Pos != tt.pos {
			t.Errorf("Parse(%q) error at position %d; want %d (%v)", tt.in, pe.Pos, tt.pos, err)
		}
		if !strings.HasPrefix(err.Error(), "fields: invalid selector ") {
			t.Errorf("Parse(%q) error = %q; want prefix %q", tt.in, err, "fields: invalid selector ")
		}
	}
	_, err := Parse("a=b=c")
	if want := `fields: invalid selector "a=b=c": at position 3: value of field "a": found unescaped '=', which must be written as "\="`; err == nil || err.Error() != want {
		t.Errorf("Parse(%q) = %v; want %v", "a=b=c", err, want)
	}
}

func TestSelectorMatches(t *testing.T) {
	pod := Set{"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": "node-a", "status.phase": "Running"}
	tests := []struct {
		sel  string
		set  Set
		want bool
	}{
		{"", pod, true},
		{"", nil, true},
		{"metadata.name=web-1", pod, true},
		{"metadata.name==web-1", pod, true},
		{"metadata.name=web-2", pod, false},
		{"metadata.name!=web-2", pod, true},
		{"metadata.name!=web-1", pod, false},
		{"spec.nodeName=node-a,status.phase=Running", pod, true},
		{"spec.nodeName=node-a,status.phase!=Running", pod, false},
		{"spec.nodeName=node-a,spec.nodeName=node-b", pod, false},
		// A missing field has the empty value.
		{"spec.nodeName=", Set{}, true},
		{"spec.nodeName=", nil, true},
		{"spec.nodeName=", pod, false},
		{"spec.nodeName!=", pod, true},
		{"spec.nodeName!=", Set{}, false},
		{"spec.nodeName=node-a", Set{}, false},
		{"spec.nodeName!=node-a", Set{}, true},
		{"spec.nodeName=", Set{"spec.nodeName": ""}, true},
		// Escaped values compare unescaped.
		{`metadata.name=a\,b`, Set{"metadata.name": "a,b"}, true},
		{`metadata.name=a\=b`, Set{"metadata.name": "a=b"}, true},
		{`metadata.name=a\\b`, Set{"metadata.name": `a\b`}, true},
		{`metadata.name=a\\b`, Set{"metadata.name": `a\\b`}, false},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.sel)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", tt.sel, err)
			continue
		}
		if got := sel.Matches(tt.set); got != tt.want {
			t.Errorf("Parse(%q).Matches(%v) = %v; want %v", tt.sel, tt.set, got, tt.want)
		}
	}
	if (Requirement{Field: "a", Operator: "~", Value: ""}).Matches(Set{}) {
		t.Error("a requirement with an unknown operator should not match")
	}
}

func TestStringRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"b=1,a=2", "a=2,b=1"},
		{" a == b ", "a=b"},
		{"a!=b,a=c", "a!=b,a=c"},
		{"a=c,a!=b", "a!=b,a=c"},
		{`a=\,\=\\`, `a=\,\=\\`},
		{"a=b c,a=b", "a=b,a=b c"},
		{"a=!", "a=!"},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", tt.in, err)
			continue
		}
		got := sel.String()
		if got != tt.want {
			t.Errorf("Parse(%q).String() = %q; want %q", tt.in, got, tt.want)
		}
		again, err := Parse(got)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", got, err)
			continue
		}
		if !slices.Equal(again.Requirements(), sel.Requirements()) {
			t.Errorf("Parse(%q) = %v; want %v", got, again.Requirements(), sel.Requirements())
		}
	}
}

func TestRequiresExactMatch(t *testing.T) {
	tests := []struct {
		sel, field string
		wantValue  string
		wantFound  bool
	}{
		{"", "spec.nodeName", "", false},
		{"spec.nodeName=n1", "spec.nodeName", "n1", true},
		{"spec.nodeName==n1", "spec.nodeName", "n1", true},
		{"spec.nodeName=", "spec.nodeName", "", true},
		{"spec.nodeName!=n1", "spec.nodeName", "", false},
		{"metadata.name=x", "spec.nodeName", "", false},
		{"metadata.name=x,spec.nodeName!=n0,spec.nodeName=n1", "spec.nodeName", "n1", true},
		{`spec.nodeName=a\,b`, "spec.nodeName", "a,b", true},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.sel)
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tt.sel, err)
		}
		v, found := sel.RequiresExactMatch(tt.field)
		if v != tt.wantValue || found != tt.wantFound {
			t.Errorf("Parse(%q).RequiresExactMatch(%q) = %q, %v; want %q, %v", tt.sel, tt.field, v, found, tt.wantValue, tt.wantFound)
		}
	}
}

func TestRequirementsIsACopy(t *testing.T) {
	sel, err := Parse("a=b,c=d")
	if err != nil {
		t.Fatal(err)
	}
	reqs := sel.Requirements()
	reqs[0].Value = "changed"
	if got := sel.String(); got != "a=b,c=d" {
		t.Errorf("modifying Requirements() changed the selector to %q", got)
	}
}

func TestSelectorFromSetAndNewSelector(t *testing.T) {
	sel, err := SelectorFromSet(Set{"spec.nodeName": "n1", "metadata.name": "a=b"})
	if err != nil {
		t.Fatalf("SelectorFromSet = %v", err)
	}
	if got, want := sel.String(), `metadata.name=a\=b,spec.nodeName=n1`; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if !sel.Matches(Set{"spec.nodeName": "n1", "metadata.name": "a=b"}) {
		t.Error("SelectorFromSet should match its own set")
	}
	for _, s := range []Set{nil, {}} {
		if sel, err := SelectorFromSet(s); err != nil || !sel.Empty() {
			t.Errorf("SelectorFromSet(%v) = %v, %v; want Everything", s, sel, err)
		}
	}

	bad := []struct {
		reqs []Requirement
		want string
	}{
		{[]Requirement{{"", Equals, "x"}}, "field path must be non-empty"},
		{[]Requirement{{"a b", Equals, "x"}}, `invalid field path "a b"`},
		{[]Requirement{{"a", "==", "x"}}, `field "a": unsupported operator "=="`},
		{[]Requirement{{"a", "in", "x"}}, `unsupported operator "in"`},
		{[]Requirement{{"a", Equals, " x"}}, `field "a": value " x" must not begin or end with whitespace`},
		{[]Requirement{{"a", Equals, "x\n"}}, `must not begin or end with whitespace`},
	}
	for _, tt := range bad {
		if _, err := NewSelector(tt.reqs...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewSelector(%v) = %v; want error containing %q", tt.reqs, err, tt.want)
		}
	}
	if _, err := SelectorFromSet(Set{"a b": "x", "c": " y"}); err == nil ||
		!strings.Contains(err.Error(), `invalid field path "a b"`) || !strings.Contains(err.Error(), `value " y"`) {
		t.Errorf("SelectorFromSet with two problems = %v; want both named", err)
	}

	in := []Requirement{{"b", NotEquals, "x,y"}, {"a", Equals, ""}}
	sel, err = NewSelector(in...)
	if err != nil {
		t.Fatalf("NewSelector = %v", err)
	}
	in[0].Value = "changed"
	if got, want := sel.String(), `a=,b!=x\,y`; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}

func TestEscapeValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain", "plain"},
		{`\`, `\\`},
		{",", `\,`},
		{"=", `\=`},
		{`a\b,c=d`, `a\\b\,c\=d`},
		{"!()", "!()"},
	}
	for _, tt := range tests {
		got := EscapeValue(tt.in)
		if got != tt.want {
			t.Errorf("EscapeValue(%q) = %q; want %q", tt.in, got, tt.want)
		}
		back, err := UnescapeValue(got)
		if err != nil || back != tt.in {
			t.Errorf("UnescapeValue(%q) = %q, %v; want %q, nil", got, back, err, tt.in)
		}
	}
	for _, in := range []string{`\`, `a\b`, "a,b", "a=b", `\\\`} {
		if got, err := UnescapeValue(in); err == nil {
			t.Errorf("UnescapeValue(%q) = %q, nil; want error", in, got)
		} else if !strings.HasPrefix(err.Error(), "fields: ") {
			t.Errorf("UnescapeValue(%q) error = %q; want prefix %q", in, err, "fields: ")
		}
	}
}

var benchSink bool

func BenchmarkSelectorMatches(b *testing.B) {
	pod := Set{"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": "node-a", "status.phase": "Running"}
	sel, err := Parse("spec.nodeName=node-a,status.phase!=Succeeded,metadata.namespace=default")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		benchSink = sel.Matches(pod)
	}
}
