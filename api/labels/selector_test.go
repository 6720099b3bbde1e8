package labels

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func mustRequirement(t testing.TB, key string, op Operator, vals ...string) Requirement {
	t.Helper()
	r, err := NewRequirement(key, op, vals)
	if err != nil {
		t.Fatalf("NewRequirement(%q, %q, %q) = %v", key, op, vals, err)
	}
	return r
}

func TestSet(t *testing.T) {
	s := Set{"b": "2", "a": "1", "empty": ""}
	if !s.Has("empty") || s.Has("missing") {
		t.Errorf("Has: got %v, %v; want true, false", s.Has("empty"), s.Has("missing"))
	}
	if got := s.Get("a"); got != "1" {
		t.Errorf("Get(%q) = %q; want %q", "a", got, "1")
	}
	if got := s.Get("missing"); got != "" {
		t.Errorf("Get(%q) = %q; want \"\"", "missing", got)
	}
	if got, want := s.String(), "a=1,b=2,empty="; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	var nilSet Set
	if nilSet.Has("a") || nilSet.Get("a") != "" || nilSet.String() != "" {
		t.Error("nil Set should behave as an empty set")
	}
	var _ Labels = s
}

func TestNewRequirement(t *testing.T) {
	tests := []struct {
		key     string
		op      Operator
		vals    []string
		wantErr string // substring; "" means success
	}{
		{"x", In, []string{"a", "b"}, ""},
		{"x", NotIn, []string{""}, ""},
		{"x", Equals, []string{"a"}, ""},
		{"x", DoubleEquals, []string{""}, ""},
		{"x", NotEquals, []string{"a"}, ""},
		{"x", Exists, nil, ""},
		{"x", DoesNotExist, []string{}, ""},
		{"x", GreaterThan, []string{"1"}, ""},
		{"x", LessThan, []string{"9223372036854775807"}, ""},
		{"example.com/x", Equals, []string{"A.b_c-1"}, ""},
		{"in", In, []string{"notin"}, ""},

		{"x", In, nil, `key "x": operator "in" requires at least one value`},
		{"x", NotIn, []string{}, `operator "notin" requires at least one value`},
		{"x", Equals, []string{"a", "b"}, `operator "=" requires exactly one value, got 2`},
		{"x", DoubleEquals, nil, `operator "==" requires exactly one value, got 0`},
		{"x", NotEquals, nil, `operator "!=" requires exactly one value`},
		{"x", Exists, []string{"a"}, `operator "exists" takes no values, got 1`},
		{"x", DoesNotExist, []string{"a"}, `operator "!" takes no values`},
		{"x", GreaterThan, []string{"a"}, `operator "gt" requires an integer value, got "a"`},
		{"x", LessThan, []string{"1", "2"}, `operator "lt" requires exactly one value, got 2`},
		{"x", GreaterThan, []string{"-1"}, `invalid label value "-1" for key "x"`},
		{"x", GreaterThan, []string{"99999999999999999999"}, `requires an integer value`},
		{"x", "~", []string{"a"}, `unknown operator "~"`},
		{"x", "", nil, `unknown operator ""`},
		{"", Exists, nil, `invalid label key "": name part must be non-empty`},
		{"a b", Exists, nil, `invalid label key "a b": name part must consist of alphanumeric characters`},
		{strings.Repeat("k", 64), Exists, nil, `name part must be no more than 63 characters`},
		{"Bad_Prefix/x", Exists, nil, `invalid label key "Bad_Prefix/x": prefix part a lowercase RFC 1123 subdomain`},
		{"x", In, []string{"ok", "not ok"}, `invalid label value "not ok" for key "x"`},
		{"x", Equals, []string{strings.Repeat("v", 64)}, `must be no more than 63 characters`},
	}
	for _, tt := range tests {
		r, err := NewRequirement(tt.key, tt.op, tt.vals)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("NewRequirement(%q, %q, %q) = %v; want no error", tt.key, tt.op, tt.vals, err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("NewRequirement(%q, %q, %q) = %v, nil; want error containing %q", tt.key, tt.op, tt.vals, r, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("NewRequirement(%q, %q, %q) error = %q; want it to contain %q", tt.key, tt.op, tt.vals, err, tt.wantErr)
		case tt.wantErr == "":
			if r.Key() != tt.key || r.Operator() != tt.op {
				t.Errorf("NewRequirement(%q, %q, %q) = key %q op %q", tt.key, tt.op, tt.vals, r.Key(), r.Operator())
			}
		}
	}
}

func TestRequirementValuesAreCopiedAndCanonical(t *testing.T) {
	vals := []string{"c", "a", "b", "a"}
	r := mustRequirement(t, "k", In, vals...)
	vals[0] = "zzz"
	if got, want := r.Values(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Values() = %q; want %q", got, want)
	}
	r.Values()[0] = "mutated"
	if got := r.String(); got != "k in (a,b,c)" {
		t.Errorf("String() = %q after mutating Values(); want %q", got, "k in (a,b,c)")
	}
	eq := mustRequirement(t, "k", Equals, "v")
	if got := eq.Values(); !slices.Equal(got, []string{"v"}) {
		t.Errorf("Values() = %q; want [v]", got)
	}
	if got := mustRequirement(t, "k", Exists).Values(); len(got) != 0 {
		t.Errorf("Values() = %q; want none", got)
	}
}

func TestRequirementString(t *testing.T) {
	tests := []struct {
		r    Requirement
		want string
	}{
		{mustRequirement(t, "x", Equals, "a"), "x=a"},
		{mustRequirement(t, "x", DoubleEquals, "a"), "x==a"},
		{mustRequirement(t, "x", NotEquals, "a"), "x!=a"},
		{mustRequirement(t, "x", Equals, ""), "x="},
		{mustRequirement(t, "x", In, "b", "a"), "x in (a,b)"},
		{mustRequirement(t, "x", NotIn, "a"), "x notin (a)"},
		{mustRequirement(t, "x", In, ""), "x in ()"},
		{mustRequirement(t, "x", In, "a", ""), "x in (,a)"},
		{mustRequirement(t, "x", Exists), "x"},
		{mustRequirement(t, "x", DoesNotExist), "!x"},
		{mustRequirement(t, "x", GreaterThan, "10"), "x>10"},
		{mustRequirement(t, "x", LessThan, "007"), "x<007"},
		{Requirement{}, "<invalid requirement>"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("String() = %q; want %q", got, tt.want)
		}
	}
}

func TestSelectorMatches(t *testing.T) {
	tests := []struct {
		sel    string
		labels Set
		want   bool
	}{
		// Everything.
		{"", nil, true},
		{"", Set{"x": "y"}, true},
		{"  ", Set{"x": "y"}, true},

		// Equality.
		{"x=y", Set{"x": "y"}, true},
		{"x==y", Set{"x": "y"}, true},
		{"x=y", Set{"x": "z"}, false},
		{"x=y", Set{}, false},
		{"x=y", nil, false},
		{"x=", Set{"x": ""}, true},
		{"x=", Set{}, false},
		{"x=y,z=w", Set{"x": "y", "z": "w"}, true},
		{"x=y,z=w", Set{"x": "y", "z": "v"}, false},
		{"x=y,z=w", Set{"x": "y"}, false},

		// Inequality: a missing key matches.
		{"x!=y", Set{"x": "z"}, true},
		{"x!=y", Set{"x": "y"}, false},
		{"x!=y", Set{}, true},
		{"x!=y", nil, true},
		{"x!=", Set{"x": ""}, false},
		{"x!=", Set{}, true},
		{"x!=y,z!=w", Set{"x": "a", "z": "w"}, false},

		// Set-based.
		{"x in (a,b)", Set{"x": "a"}, true},
		{"x in (a,b)", Set{"x": "b"}, true},
		{"x in (a,b)", Set{"x": "c"}, false},
		{"x in (a,b)", Set{}, false},
		{"x in (a,b)", Set{"y": "a"}, false},
		{"x in ()", Set{"x": ""}, true},
		{"x in ()", Set{}, false},
		{"x in (,a)", Set{"x": ""}, true},
		{"x in (,a)", Set{"x": "a"}, true},
		{"x notin (a,b)", Set{"x": "c"}, true},
		{"x notin (a,b)", Set{"x": "a"}, false},
		{"x notin (a,b)", Set{}, true},
		{"x notin (a,b)", nil, true},
		{"x notin ()", Set{"x": ""}, false},
		{"x notin ()", Set{"x": "a"}, true},
		{"x in (a),x notin (a)", Set{"x": "a"}, false},
		{"x in (a,b),x notin (b)", Set{"x": "a"}, true},
		{"x in (a,b),x notin (b)", Set{"x": "b"}, false},

		// Existence.
		{"x", Set{"x": ""}, true},
		{"x", Set{"x": "a"}, true},
		{"x", Set{"y": "a"}, false},
		{"x", nil, false},
		{"!x", Set{"y": "a"}, true},
		{"!x", nil, true},
		{"!x", Set{"x": ""}, false},
		{"x,!y", Set{"x": "1"}, true},
		{"x,!y", Set{"x": "1", "y": "2"}, false},
		{"x,!x", Set{"x": "1"}, false},
		{"x,!x", Set{}, false},

		// Numeric comparison.
		{"x>1", Set{"x": "2"}, true},
		{"x>1", Set{"x": "1"}, false},
		{"x>1", Set{"x": "0"}, false},
		{"x>1", Set{"x": "10"}, true}, // numeric, not lexical
		{"x>9", Set{"x": "10"}, true},
		{"x<10", Set{"x": "9"}, true},
		{"x<10", Set{"x": "10"}, false},
		{"x<10", Set{"x": "-5"}, true},
		{"x<1", Set{"x": "01"}, false},
		{"x>1", Set{}, false},
		{"x<1", Set{}, false},
		{"x>1", Set{"x": "two"}, false},
		{"x<1", Set{"x": "two"}, false},
		{"x<1", Set{"x": ""}, false},
		{"x>0", Set{"x": "1.5"}, false},
		{"x>0", Set{"x": "99999999999999999999"}, false}, // overflows int64
		{"x>1,x<5", Set{"x": "3"}, true},
		{"x>1,x<5", Set{"x": "5"}, false},
		{"x>9223372036854775806", Set{"x": "9223372036854775807"}, true},

		// Mixed.
		{"env in (prod,staging),tier!=db,!canary,owner", Set{"env": "prod", "tier": "web", "owner": "me"}, true},
		{"env in (prod,staging),tier!=db,!canary,owner", Set{"env": "prod", "tier": "db", "owner": "me"}, false},
		{"env in (prod,staging),tier!=db,!canary,owner", Set{"env": "prod", "owner": "me", "canary": "true"}, false},
		{"env in (prod,staging),tier!=db,!canary,owner", Set{"env": "prod"}, false},
		{"example.com/app=web", Set{"example.com/app": "web"}, true},
		{"example.com/app=web", Set{"app": "web"}, false},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.sel)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", tt.sel, err)
			continue
		}
		if got := sel.Matches(tt.labels); got != tt.want {
			t.Errorf("Parse(%q).Matches(%v) = %v; want %v", tt.sel, tt.labels, got, tt.want)
		}
	}
}

func TestLargeInList(t *testing.T) {
	var vals []string
	for i := range 100 {
		vals = append(vals, fmt.Sprintf("v%03d", i))
	}
	in := mustRequirement(t, "k", In, vals...)
	notIn := mustRequirement(t, "k", NotIn, vals...)
	for _, tt := range []struct {
		v    string
		want bool
	}{{"v000", true}, {"v050", true}, {"v099", true}, {"v100", false}, {"", false}, {"zzz", false}} {
		ls := Set{"k": tt.v}
		if got := in.Matches(ls); got != tt.want {
			t.Errorf("in.Matches(%v) = %v; want %v", ls, got, tt.want)
		}
		if got := notIn.Matches(ls); got == tt.want {
			t.Errorf("notin.Matches(%v) = %v; want %v", ls, got, !tt.want)
		}
	}
}

func TestEverythingNothing(t *testing.T) {
	every := Everything()
	if !every.Empty() || every.IsNothing() || every.String() != "" {
		t.Errorf("Everything(): Empty=%v IsNothing=%v String=%q; want true, false, \"\"", every.Empty(), every.IsNothing(), every.String())
	}
	if !every.Matches(nil) || !every.Matches(Set{"a": "b"}) {
		t.Error("Everything() should match every label set")
	}
	if reqs, ok := every.Requirements(); len(reqs) != 0 || !ok {
		t.Errorf("Everything().Requirements() = %v, %v; want [], true", reqs, ok)
	}
	var zero Selector
	if !zero.Empty() || !zero.Matches(Set{"a": "b"}) {
		t.Error("zero Selector should behave as Everything()")
	}

	nothing := Nothing()
	if nothing.Empty() || !nothing.IsNothing() {
		t.Errorf("Nothing(): Empty=%v IsNothing=%v; want false, true", nothing.Empty(), nothing.IsNothing())
	}
	if nothing.Matches(nil) || nothing.Matches(Set{}) || nothing.Matches(Set{"a": "b"}) {
		t.Error("Nothing() should match no label set")
	}
	if reqs, ok := nothing.Requirements(); reqs != nil || ok {
		t.Errorf("Nothing().Requirements() = %v, %v; want nil, false", reqs, ok)
	}
	added := nothing.Add(mustRequirement(t, "a", Exists))
	if !added.IsNothing() || added.Matches(Set{"a": "b"}) {
		t.Error("Nothing().Add(...) should still be Nothing")
	}
	if _, found := nothing.RequiresExactMatch("a"); found {
		t.Error("Nothing().RequiresExactMatch should not find anything")
	}
	// Serialising Nothing must not round-trip into Everything.
	if s, err := Parse(nothing.String()); err == nil {
		t.Errorf("Parse(Nothing().String()) = %v, nil; want error", s)
	}
}

func TestSelectorAdd(t *testing.T) {
	base, err := Parse("b=2")
	if err != nil {
		t.Fatal(err)
	}
	ext := base.Add(mustRequirement(t, "a", In, "x", "y"), mustRequirement(t, "c", DoesNotExist), mustRequirement(t, "b", Equals, "2"))
	if got, want := base.String(), "b=2"; got != want {
		t.Errorf("Add modified the receiver: String() = %q; want %q", got, want)
	}
	if got, want := ext.String(), "a in (x,y),b=2,!c"; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	reqs, ok := ext.Requirements()
	if !ok || len(reqs) != 3 {
		t.Fatalf("Requirements() = %v, %v; want 3 requirements, true", reqs, ok)
	}
	if reqs[0].Key() != "a" || reqs[1].Key() != "b" || reqs[2].Key() != "c" {
		t.Errorf("Requirements() = %v; want sorted by key", reqs)
	}
	reqs[0] = mustRequirement(t, "zzz", Exists)
	if got := ext.String(); got != "a in (x,y),b=2,!c" {
		t.Errorf("modifying Requirements() result changed the selector: %q", got)
	}
	if got := base.Add(); got.String() != "b=2" {
		t.Errorf("Add() = %q; want unchanged %q", got, "b=2")
	}
	if got := Everything().Add(Requirement{}); got.Matches(Set{"a": "b"}) || got.String() != "<invalid requirement>" {
		t.Errorf("Everything().Add(Requirement{}) = %q; want a selector that matches nothing and does not serialise", got)
	}
}

func TestSelectorStringCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"b=1,a=2", "a=2,b=1"},
		{"  b = 1 ,  a  ==  2 ", "a==2,b=1"},
		{"x in (c, b,a,b)", "x in (a,b,c)"},
		{"x notin (b,a)", "x notin (a,b)"},
		{"x!=a,x=b", "x!=a,x=b"},
		{"x=b,x!=a", "x!=a,x=b"},
		{"a=1,a=1", "a=1"},
		{"!z,y,x>3,w<4", "w<4,x>3,y,!z"},
		{"a in (x,),b in (,y),c in (x,,y)", "a in (,x),b in (,y),c in (,x,y)"},
		{"a=", "a="},
		{"a==", "a=="},
		{"a!=", "a!="},
		{"a in ()", "a in ()"},
		{"\ta\n=\r\nb", "a=b"},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", tt.in, err)
			continue
		}
		if got := sel.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestRequiresExactMatch(t *testing.T) {
	tests := []struct {
		sel, key  string
		wantValue string
		wantFound bool
	}{
		{"", "x", "", false},
		{"x=a", "x", "a", true},
		{"x==a", "x", "a", true},
		{"x=", "x", "", true},
		{"x in (a)", "x", "a", true},
		{"x in (a,b)", "x", "", false},
		{"x!=a", "x", "", false},
		{"x notin (a)", "x", "", false},
		{"x", "x", "", false},
		{"!x", "x", "", false},
		{"x>1", "x", "", false},
		{"y=a", "x", "", false},
		{"x!=b,x=a,y=c", "x", "a", true},
		{"x in (a,b),x=b", "x", "b", true},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.sel)
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tt.sel, err)
		}
		v, found := sel.RequiresExactMatch(tt.key)
		if v != tt.wantValue || found != tt.wantFound {
			t.Errorf("Parse(%q).RequiresExactMatch(%q) = %q, %v; want %q, %v", tt.sel, tt.key, v, found, tt.wantValue, tt.wantFound)
		}
	}
}

func TestSelectorFromSet(t *testing.T) {
	sel, err := SelectorFromSet(Set{"b": "2", "a": "1", "c": ""})
	if err != nil {
		t.Fatalf("SelectorFromSet = %v", err)
	}
	if got, want := sel.String(), "a=1,b=2,c="; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
	if !sel.Matches(Set{"a": "1", "b": "2", "c": "", "d": "x"}) {
		t.Error("should match a superset")
	}
	if sel.Matches(Set{"a": "1", "b": "2"}) {
		t.Error("should not match when c is missing")
	}
	for _, s := range []Set{nil, {}} {
		sel, err := SelectorFromSet(s)
		if err != nil || !sel.Empty() {
			t.Errorf("SelectorFromSet(%v) = %v, %v; want Everything", s, sel, err)
		}
	}
	_, err = SelectorFromSet(Set{"a,b": "c", "ok": "x=y"})
	if err == nil {
		t.Fatal("SelectorFromSet with invalid key and value = nil error")
	}
	for _, want := range []string{`invalid label key "a,b"`, `invalid label value "x=y" for key "ok"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("SelectorFromSet error = %q; want it to contain %q", err, want)
		}
	}
}

var benchSink bool

func BenchmarkSelectorMatches(b *testing.B) {
	ls := Set{
		"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "web-1",
		"env": "prod", "tier": "frontend", "version": "42", "team": "payments",
	}
	cases := []struct{ name, sel string }{
		{"Everything", ""},
		{"Equals", "app.kubernetes.io/name=web"},
		{"Mixed", "app.kubernetes.io/name=web,env in (prod,staging),tier!=db,!canary,version>40,team"},
		{"NoMatch", "app.kubernetes.io/name=api,env in (prod,staging)"},
	}
	for _, c := range cases {
		sel, err := Parse(c.sel)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchSink = sel.Matches(ls)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	const s = "app.kubernetes.io/name=web,env in (prod,staging),tier!=db,!canary,version>40,team"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(s); err != nil {
			b.Fatal(err)
		}
	}
}

// mapLabels implements Labels without being a Set.
type mapLabels map[string]string

func (m mapLabels) Has(k string) bool   { _, ok := m[k]; return ok }
func (m mapLabels) Get(k string) string { return m[k] }

func TestMatchesOtherLabelsImplementations(t *testing.T) {
	sel, err := Parse("a=1,b!=2,c in (3),d notin (4),e,!f,g>5,h<6")
	if err != nil {
		t.Fatal(err)
	}
	yes := mapLabels{"a": "1", "c": "3", "e": "", "g": "6", "h": "5"}
	if !sel.Matches(yes) {
		t.Errorf("Matches(%v) = false; want true", yes)
	}
	no := mapLabels{"a": "1", "c": "3", "e": "", "g": "6", "h": "5", "f": ""}
	if sel.Matches(no) {
		t.Errorf("Matches(%v) = true; want false", no)
	}
	if sel.Matches(nil) {
		t.Error("Matches(nil) = true; want false")
	}
	if r := mustRequirement(t, "x", NotIn, "a"); !r.Matches(nil) {
		t.Error("NotIn.Matches(nil) = false; want true")
	}
}
