package labels

import "testing"

// FuzzParse checks that Parse never panics and that every selector it
// accepts has a String form that parses again to the same String.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"x=a,y!=b",
		"x in (a,b),y notin (,c)",
		"!x,y,z>1,w<2",
		"example.com/app==web",
		"in in (in,notin)",
		"x in ()",
		"x=,y==,z!=",
		"x in (a",
		"a=b=c",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sel, err := Parse(in)
		if err != nil {
			if sel.String() != "" || !sel.Empty() {
				t.Fatalf("Parse(%q) returned error %v together with non-empty selector %q", in, err, sel)
			}
			return
		}
		s1 := sel.String()
		again, err := Parse(s1)
		if err != nil {
			t.Fatalf("Parse(%q) = %v; want no error (String of Parse(%q))", s1, err, in)
		}
		if s2 := again.String(); s2 != s1 {
			t.Fatalf("Parse(%q).String() = %q; want %q (input %q)", s1, s2, s1, in)
		}
		// Matching must not panic and must agree between the two forms.
		ls := Set{"x": "a", "y": "1", "in": ""}
		if sel.Matches(ls) != again.Matches(ls) {
			t.Fatalf("Parse(%q) and Parse(%q) disagree on %v", in, s1, ls)
		}
	})
}
