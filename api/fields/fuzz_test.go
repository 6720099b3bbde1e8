package fields

import (
	"slices"
	"testing"
)

// FuzzParse checks that Parse never panics and that every selector it
// accepts has a String form that parses again to the same requirements and
// the same String.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"metadata.name=foo,spec.nodeName!=bar",
		"status.phase==Running",
		`a=b\,c,d=e\=f,g=h\\`,
		" a = b , c != d ",
		"a=b=c",
		`a=b\`,
		"a=b,,c=d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sel, err := Parse(in)
		if err != nil {
			if !sel.Empty() {
				t.Fatalf("Parse(%q) returned error %v together with non-empty selector %q", in, err, sel)
			}
			return
		}
		s1 := sel.String()
		again, err := Parse(s1)
		if err != nil {
			t.Fatalf("Parse(%q) = %v; want no error (String of Parse(%q))", s1, err, in)
		}
		if !slices.Equal(again.Requirements(), sel.Requirements()) {
			t.Fatalf("Parse(%q) = %v; want %v (input %q)", s1, again.Requirements(), sel.Requirements(), in)
		}
		if s2 := again.String(); s2 != s1 {
			t.Fatalf("Parse(%q).String() = %q; want %q (input %q)", s1, s2, s1, in)
		}
		// Every accepted requirement must be expressible.
		if _, err := NewSelector(sel.Requirements()...); err != nil {
			t.Fatalf("NewSelector(Parse(%q).Requirements()) = %v", in, err)
		}
		// Each term must match a set holding exactly its value and
		// behave consistently with its operator.
		for _, r := range sel.Requirements() {
			fs := Set{r.Field: r.Value}
			if got, want := r.Matches(fs), r.Operator == Equals; got != want {
				t.Fatalf("%v.Matches(%v) = %v; want %v (input %q)", r, fs, got, want, in)
			}
		}
	})
}
