package labels

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// req is a compact description of a Requirement for table tests.
type req struct {
	key  string
	op   Operator
	vals []string
}

func describe(s Selector) []req {
	reqs, _ := s.Requirements()
	out := make([]req, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, req{r.Key(), r.Operator(), r.Values()})
	}
	return out
}

func sameReqs(a, b []req) bool {
	return slices.EqualFunc(a, b, func(x, y req) bool {
		return x.key == y.key && x.op == y.op && slices.Equal(x.vals, y.vals)
	})
}

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []req
	}{
		{"", []req{}},
		{" \t\r\n", []req{}},
		{"x=a", []req{{"x", Equals, []string{"a"}}}},
		{"x==a", []req{{"x", DoubleEquals, []string{"a"}}}},
		{"x!=a", []req{{"x", NotEquals, []string{"a"}}}},
		{"x=", []req{{"x", Equals, []string{""}}}},
		{"x==", []req{{"x", DoubleEquals, []string{""}}}},
		{"x!=,y", []req{{"x", NotEquals, []string{""}}, {"y", Exists, []string{}}}},
		{"x in (a)", []req{{"x", In, []string{"a"}}}},
		{"x in (b,a)", []req{{"x", In, []string{"a", "b"}}}},
		{"x in(a,b)", []req{{"x", In, []string{"a", "b"}}}},
		{"x  in  (  a  ,  b  )  ", []req{{"x", In, []string{"a", "b"}}}},
		{"x notin (a, b)", []req{{"x", NotIn, []string{"a", "b"}}}},
		{"x in ()", []req{{"x", In, []string{""}}}},
		{"x in (,)", []req{{"x", In, []string{""}}}},
		{"x in (a,)", []req{{"x", In, []string{"", "a"}}}},
		{"x in (,a)", []req{{"x", In, []string{"", "a"}}}},
		{"x in (a,,b)", []req{{"x", In, []string{"", "a", "b"}}}},
		{"x in (in,notin)", []req{{"x", In, []string{"in", "notin"}}}},
		{"x=in", []req{{"x", Equals, []string{"in"}}}},
		{"x", []req{{"x", Exists, []string{}}}},
		{"!x", []req{{"x", DoesNotExist, []string{}}}},
		{"! x", []req{{"x", DoesNotExist, []string{}}}},
		{"x>1", []req{{"x", GreaterThan, []string{"1"}}}},
		{"x < 10", []req{{"x", LessThan, []string{"10"}}}},
		{"x>007", []req{{"x", GreaterThan, []string{"007"}}}},
		{"in", []req{{"in", Exists, []string{}}}},
		{"notin in (in)", []req{{"notin", In, []string{"in"}}}},
		{"!in,in=notin", []req{{"in", DoesNotExist, []string{}}, {"in", Equals, []string{"notin"}}}},
		{"example.com/app=web", []req{{"example.com/app", Equals, []string{"web"}}}},
		{"a.b-c.d/E.f-G_h=I.j-K_l", []req{{"a.b-c.d/E.f-G_h", Equals, []string{"I.j-K_l"}}}},
		{"x=a,y!=b,z in (c),!w,v,u>1",
			[]req{
				{"u", GreaterThan, []string{"1"}},
				{"v", Exists, []string{}},
				{"w", DoesNotExist, []string{}},
				{"x", Equals, []string{"a"}},
				{"y", NotEquals, []string{"b"}},
				{"z", In, []string{"c"}},
			}},
		{"x=a,x!=b", []req{{"x", NotEquals, []string{"b"}}, {"x", Equals, []string{"a"}}}},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want %v", tt.in, err, tt.want)
			continue
		}
		if got := describe(sel); !sameReqs(got, tt.want) {
			t.Errorf("Parse(%q) = %v; want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in      string
		pos     int
		wantMsg string // substring of the error message
	}{
		{"x in (a", 7, `found end of input, expected "," or ")" in value list`},
		{"x in (a b)", 8, `found "b", expected "," or ")" in value list`},
		{"x in a", 5, `found "a", expected "(" after "in"`},
		{"x notin a", 8, `found "a", expected "(" after "notin"`},
		{"x in", 4, `found end of input, expected "(" after "in"`},
		{"x in (a))", 8, `found ")", expected "," or end of input`},
		{"x in ((a)", 6, `found "(", expected "," or ")" in value list`},
		{"=b", 0, `found "=", expected a label key or "!"`},
		{"==b", 0, `found "==", expected a label key or "!"`},
		{",", 0, `found ",", expected a label key or "!"`},
		{"x=a,", 4, `found end of input, expected a label key or "!"`},
		{"x=a,,y=b", 4, `found ",", expected a label key or "!"`},
		{"x=a=b", 3, `found "=", expected "," or end of input`},
		{"x==a=b", 4, `found "=", expected "," or end of input`},
		{"x=(a)", 2, `found "(", expected a value after "="`},
		{"x!=!a", 3, `found "!", expected a value after "!="`},
		{"x b", 2, `found "b", expected an operator ("=", "==", "!=", "in", "notin", ">", "<"), "," or end of input after key "x"`},
		{"x y=z", 2, `found "y", expected an operator`},
		{"x (a)", 2, `found "(", expected an operator`},
		{"x!a", 1, `found "!", expected an operator`},
		{"!x=b", 2, `found "=", expected "," or end of input ("!key" takes no operator or value)`},
		{"!x in (a)", 3, `("!key" takes no operator or value)`},
		{"!x y", 3, `found "y", expected "," or end of input`},
		{"!", 1, `found end of input, expected a label key after "!"`},
		{"!!x", 1, `found "!", expected a label key after "!"`},
		{"!=x", 0, `found "!=", expected a label key or "!"`},
		{"x>", 2, `operator "gt" requires an integer value, got ""`},
		{"x>a", 2, `operator "gt" requires an integer value, got "a"`},
		{"x<1.5", 2, `operator "lt" requires an integer value, got "1.5"`},
		{"x>=1", 2, `found "=", expected a value after ">"`},
		{"x>-1", 2, `invalid label value "-1" for key "x"`},
		{"x>(1)", 2, `found "(", expected a value after ">"`},
		{"x=b$", 2, `invalid label value "b$" for key "x"`},
		{"x in (a,b c)", 10, `found "c", expected "," or ")"`},
		{"x in (a,-b)", 5, `invalid label value "-b" for key "x"`},
		{"x=" + strings.Repeat("v", 64), 2, `must be no more than 63 characters`},
		{"a$b=c", 0, `invalid label key "a$b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{"y=1, -x", 5, `invalid label key "-x"`},
		{strings.Repeat("k", 64) + "=v", 0, `name part must be no more than 63 characters`},
		{strings.Repeat("p", 254) + "/k", 0, `prefix part must be no more than 253 characters`},
		{"a/b/c", 0, `a qualified name must consist of`},
		{"/x", 0, `prefix part must be non-empty`},
		{"x/", 0, `name part must be non-empty`},
		{"é=1", 0, `invalid label key "é"`},
		{"x\x00=1", 0, `invalid label key "x\x00"`},
		{"<nothing>", 0, `found "<", expected a label key or "!"`},
	}
	for _, tt := range tests {
		sel, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v; want error containing %q", tt.in, describe(sel), tt.wantMsg)
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
		if pe.Selector != tt.in || !strings.HasPrefix(err.Error(), "labels: invalid selector ") {
			t.Errorf("Parse(%q) error = %q; want it to start with 'labels: invalid selector' and quote the input", tt.in, err)
		}
	}
}

// TestParseErrorFormat pins the full text of one error message.
func TestParseErrorFormat(t *testing.T) {
	_, err := Parse("x in y")
	want := `labels: invalid selector "x in y": at position 5: found "y", expected "(" after "in"`
	if err == nil || err.Error() != want {
		t.Errorf("Parse(%q) = %v; want %v", "x in y", err, want)
	}
}

func TestParseRoundTrip(t *testing.T) {
	inputs := []string{
		"",
		"x=a", "x==a", "x!=a", "x=", "x==", "x!=",
		"x in (a,b,c)", "x notin (c,b,a)", "x in ()", "x notin (,)", "x in (a,,b)",
		"x", "!x", "x>5", "x<0005",
		"in", "notin=in", "!notin",
		"b=1, a in (x, y), !c, d, e>1, f<2, g!=h, i notin (j)",
		"example.com/app=web,kubernetes.io/os in (linux,windows)",
	}
	for _, in := range inputs {
		sel, err := Parse(in)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", in, err)
			continue
		}
		s1 := sel.String()
		again, err := Parse(s1)
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error (String of Parse(%q))", s1, err, in)
			continue
		}
		if !sameReqs(describe(again), describe(sel)) {
			t.Errorf("Parse(%q) = %v; want %v", s1, describe(again), describe(sel))
		}
		if s2 := again.String(); s2 != s1 {
			t.Errorf("Parse(%q).String() = %q; want %q", s1, s2, s1)
		}
	}
}

// TestRequirementStringRoundTrip checks that every kind of valid requirement,
// including ones Parse never produces from odd input, serialises to a string
// that parses back to the same requirement.
func TestRequirementStringRoundTrip(t *testing.T) {
	reqs := []Requirement{
		mustRequirement(t, "in", In, "in", "notin", ""),
		mustRequirement(t, "notin", NotIn, "x"),
		mustRequirement(t, "in", Exists),
		mustRequirement(t, "notin", DoesNotExist),
		mustRequirement(t, "a", Equals, ""),
		mustRequirement(t, "a", NotEquals, ""),
		mustRequirement(t, "a", GreaterThan, "9223372036854775807"),
		mustRequirement(t, "p.q/r", LessThan, "0"),
	}
	for _, r := range reqs {
		sel := Everything().Add(r)
		again, err := Parse(sel.String())
		if err != nil {
			t.Errorf("Parse(%q) = %v; want no error", sel.String(), err)
			continue
		}
		if !sameReqs(describe(again), describe(sel)) {
			t.Errorf("Parse(%q) = %v; want %v", sel.String(), describe(again), describe(sel))
		}
	}
}
