package encryption

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestKeyringSealUnsealRotate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server", FileName)
	kr, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"data":{"k":"c2VjcmV0"}}`)
	sealed, err := kr.Seal(plain, []byte("secrets"))
	if err != nil || bytes.Contains(sealed, []byte("c2VjcmV0")) || !kr.Current(sealed) {
		t.Fatalf("Seal = %q, %v", sealed, err)
	}
	if got, err := kr.Unseal(sealed, []byte("secrets")); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("Unseal = %q, %v", got, err)
	}
	if _, err := kr.Unseal(sealed, []byte("configmaps")); err == nil {
		t.Error("Unseal with other associated data succeeded")
	}
	if got, err := kr.Unseal(plain, []byte("secrets")); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("Unseal(plain) = %q, %v; want it unchanged", got, err)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	if _, err := kr.Unseal(tampered, []byte("secrets")); err == nil {
		t.Error("Unseal of a tampered value succeeded")
	}

	next, err := New(kr)
	if err != nil {
		t.Fatal(err)
	}
	if next.Current(sealed) {
		t.Error("a value sealed with the old key counts as current after rotation")
	}
	if got, err := next.Unseal(sealed, []byte("secrets")); err != nil || !bytes.Equal(got, plain) {
		t.Errorf("the rotated ring cannot read the old value: %q, %v", got, err)
	}
	if err := next.Primary().Write(path); err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil || again.ID() != next.ID() {
		t.Fatalf("Load after rotation = %v, %v", again, err)
	}
	if _, err := again.Unseal(sealed, []byte("secrets")); err == nil {
		t.Error("a value under a dropped key still unseals")
	}
}
