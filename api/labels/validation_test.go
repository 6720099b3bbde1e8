package labels

import (
	"strings"
	"testing"
)

func TestIsQualifiedName(t *testing.T) {
	valid := []string{
		"a", "A", "1", "simple", "now-with-dashes", "1-starts-with-num", "1234",
		"simple/simple", "now-with-dashes/simple", "now-with-dashes/now-with-dashes",
		"now.with.dots/simple", "now-with.dashes-and.dots/simple", "1-num.2-num/3-num",
		"1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123", "example.com/Uppercase_Is_OK_123",
		"requests.storage-foo", "app.kubernetes.io/name",
		strings.Repeat("a", 63), strings.Repeat("a", 253) + "/" + strings.Repeat("b", 63),
	}
	for _, v := range valid {
		if errs := IsQualifiedName(v); len(errs) != 0 {
			t.Errorf("IsQualifiedName(%q) = %q; want no errors", v, errs)
		}
	}
	invalid := []string{
		"", "nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-",
		"only/one/slash", "Example.com/abc", "example_com/abc", "example.com/",
		"/simple", strings.Repeat("a", 64), strings.Repeat("a", 254) + "/abc",
		"a b", "a,b", "é", "_a", "a.",
	}
	for _, v := range invalid {
		if errs := IsQualifiedName(v); len(errs) == 0 {
			t.Errorf("IsQualifiedName(%q) = no errors; want errors", v)
		}
	}
}

func TestIsQualifiedNameMessages(t *testing.T) {
	const regexMsg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
	tests := []struct {
		in   string
		want []string
	}{
		{"a$b", []string{regexMsg}},
		{"", []string{"name part must be non-empty", regexMsg}},
		{strings.Repeat("a", 64), []string{"name part must be no more than 63 characters"}},
		{"/a", []string{"prefix part must be non-empty"}},
		{"Foo.com/a", []string{"prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{"a/b/c", []string{"a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}},
	}
	for _, tt := range tests {
		got := IsQualifiedName(tt.in)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("IsQualifiedName(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsValidLabelValue(t *testing.T) {
	valid := []string{
		"", "simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234",
		"A", "ZZZ", "a.b_c-d", strings.Repeat("a", 63),
	}
	for _, v := range valid {
		if errs := IsValidLabelValue(v); len(errs) != 0 {
			t.Errorf("IsValidLabelValue(%q) = %q; want no errors", v, errs)
		}
	}
	invalid := []string{
		"nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad",
		"-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot.",
		strings.Repeat("a", 64), "a b", "a/b", "a,b", "(", "!",
	}
	for _, v := range invalid {
		if errs := IsValidLabelValue(v); len(errs) == 0 {
			t.Errorf("IsValidLabelValue(%q) = no errors; want errors", v)
		}
	}
	got := IsValidLabelValue("-x")
	want := "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
	if len(got) != 1 || got[0] != want {
		t.Errorf("IsValidLabelValue(%q) = %q; want [%q]", "-x", got, want)
	}
	got = IsValidLabelValue(strings.Repeat("b", 64))
	if len(got) != 1 || got[0] != "must be no more than 63 characters" {
		t.Errorf("IsValidLabelValue(64 chars) = %q; want the length message only", got)
	}
}

func TestIsDNS1123Label(t *testing.T) {
	valid := []string{"a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a", strings.Repeat("a", 63)}
	for _, v := range valid {
		if errs := IsDNS1123Label(v); len(errs) != 0 {
			t.Errorf("IsDNS1123Label(%q) = %q; want no errors", v, errs)
		}
	}
	invalid := []string{"", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", strings.Repeat("a", 64)}
	for _, v := range invalid {
		if errs := IsDNS1123Label(v); len(errs) == 0 {
			t.Errorf("IsDNS1123Label(%q) = no errors; want errors", v)
		}
	}
	if got := IsDNS1123Label("a.b"); len(got) != 1 || got[0] != "must not contain dots" {
		t.Errorf("IsDNS1123Label(%q) = %q; want [\"must not contain dots\"]", "a.b", got)
	}
	want := "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
	if got := IsDNS1123Label("My-Name"); len(got) != 1 || got[0] != want {
		t.Errorf("IsDNS1123Label(%q) = %q; want [%q]", "My-Name", got, want)
	}
}

func TestIsDNS1123Subdomain(t *testing.T) {
	valid := []string{
		"a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "012", "1a", "1-a",
		"a.a", "ab.a", "abc.a", "a1.a", "a-1.a", "a--1--2--b.a", "a.1", "ab.1",
		"0.a", "01.a", "012.a", "1a.a", "1-a.a", "a.b.c.d.e", "aa.bb.cc.dd.ee",
		"1.2.3.4.5", "11.22.33.44.55", strings.Repeat("a", 253),
	}
	for _, v := range valid {
		if errs := IsDNS1123Subdomain(v); len(errs) != 0 {
			t.Errorf("IsDNS1123Subdomain(%q) = %q; want no errors", v, errs)
		}
	}
	invalid := []string{
		"", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1",
		"_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a..b",
		"1.", ".1", "1..2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "A.a",
		"aB.a", "ab.A", "A1.a", "a1.A", "A.1", "aB.1", "A1.1", "1A.1", "0.A",
		"01.A", "012.A", "1A.a", "1a.A", "A.B.C.D.E", "AA.BB.CC.DD.EE",
		"a.B.c.d.e", "aa.bB.cc.dd.ee", "a@b", "a,b", "a_b", "a;b", "a:b",
		"a%b", "a?b", "a$b", strings.Repeat("a", 254),
	}
	for _, v := range invalid {
		if errs := IsDNS1123Subdomain(v); len(errs) == 0 {
			t.Errorf("IsDNS1123Subdomain(%q) = no errors; want errors", v)
		}
	}
	if got := IsDNS1123Subdomain(strings.Repeat("a", 254)); len(got) != 1 || got[0] != "must be no more than 253 characters" {
		t.Errorf("IsDNS1123Subdomain(254 chars) = %q; want the length message only", got)
	}
}

func TestSetValidate(t *testing.T) {
	if err := (Set{"app": "web", "example.com/tier": ""}).Validate(); err != nil {
		t.Errorf("Validate() = %v; want nil", err)
	}
	if err := Set(nil).Validate(); err != nil {
		t.Errorf("Set(nil).Validate() = %v; want nil", err)
	}
	err := Set{"bad key": "ok", "good": "bad value"}.Validate()
	if err == nil {
		t.Fatal("Validate() = nil; want error")
	}
	for _, want := range []string{`invalid label key "bad key"`, `invalid label value "bad value" for key "good"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q; want it to contain %q", err, want)
		}
	}
}
