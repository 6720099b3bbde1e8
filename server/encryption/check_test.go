package encryption

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckKey(t *testing.T) {
	a, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(a) // b's first key is new, then a's
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	// A different key with a's id: same id, other bytes.
	forged := &Keyring{keys: []key{{id: a.ID(), raw: other.keys[0].raw}}}
	for _, tc := range []struct {
		name  string
		ring  *Keyring
		check []byte
		want  int
		err   error
	}{
		{"own", a, a.Check(), 0, nil},
		{"rotated ring, old check", b, a.Check(), 1, nil},
		{"rotated ring, new check", b, b.Check(), 0, nil},
		{"old ring, new check", a, b.Check(), 0, ErrKeyMismatch},
		{"another key", other, a.Check(), 0, ErrKeyMismatch},
		{"same id, another key", forged, a.Check(), 0, ErrKeyMismatch},
	} {
		got, err := tc.ring.CheckKey(tc.check)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: CheckKey = %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	for _, bad := range []string{"", "skcheck1 k1", "nope k1 abc", "skcheck1 k1 abc extra"} {
		if _, err := a.CheckKey([]byte(bad)); err == nil || errors.Is(err, ErrKeyMismatch) {
			t.Errorf("CheckKey(%q) = %v; want a malformed-check error", bad, err)
		}
	}
	if id := CheckID(a.Check()); id != a.ID() {
		t.Errorf("CheckID = %q; want %q", id, a.ID())
	}
	if strings.Contains(string(a.Check()), string(a.keys[0].raw)) {
		t.Error("the check holds the key")
	}
}

func TestReadNeverCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	if _, err := Read(path); err == nil {
		t.Fatal("Read of a missing file = nil error")
	}
	kr, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := kr.Create(path); err != nil {
		t.Fatal(err)
	}
	if err := kr.Create(path); err == nil {
		t.Error("Create over an existing key file = nil error; want a refusal")
	}
	got, err := Read(path)
	if err != nil || got.ID() != kr.ID() {
		t.Errorf("Read = %v, %v; want key %s", got, err, kr.ID())
	}
}
