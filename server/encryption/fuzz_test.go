package encryption

import "testing"

// FuzzParse: no key file content crashes the parser, and a parsed ring
// seals and unseals.
func FuzzParse(f *testing.F) {
	f.Add([]byte(header + "aesgcm k1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"))
	f.Add([]byte("aesgcm k1 !!!\n"))
	f.Add([]byte("# nothing\n"))
	f.Add([]byte("aesgcm  \n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		kr, err := parse(b)
		if err != nil {
			return
		}
		sealed, err := kr.Seal([]byte("x"), []byte("secrets"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := kr.Unseal(sealed, []byte("secrets")); err != nil || string(got) != "x" {
			t.Fatalf("Unseal = %q, %v", got, err)
		}
	})
}

// FuzzUnseal: no stored value crashes Unseal.
func FuzzUnseal(f *testing.F) {
	kr, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	sealed, _ := kr.Seal([]byte(`{"a":1}`), []byte("secrets"))
	f.Add(sealed)
	f.Add([]byte(`{"a":1}`))
	f.Add(append([]byte(nil), magic...))
	f.Add(append(append([]byte(nil), magic...), 200))
	f.Fuzz(func(t *testing.T, b []byte) {
		kr.Unseal(b, []byte("secrets"))
		kr.Current(b)
	})
}
