package tlsutil

import (
	"testing"
	"time"
)

func TestSessionTicketKeysRotateAndSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	ca, err := EnsureCA(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 28, 23, 0, 0, 0, time.UTC)
	keys, err := SessionTicketKeys(ca, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] == keys[1] || keys[0] == ([32]byte{}) {
		t.Fatalf("keys = %x; want two distinct non-zero keys", keys)
	}
	// The same CA loaded again (a restart) gives the same keys.
	again, err := EnsureCA(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := SessionTicketKeys(again, now.Add(time.Minute)); err != nil || k[0] != keys[0] || k[1] != keys[1] {
		t.Errorf("keys after a restart = %x, %v; want %x", k, err, keys)
	}
	// A period later the current key becomes the previous one.
	next, err := SessionTicketKeys(ca, now.Add(TicketKeyPeriod))
	if err != nil {
		t.Fatal(err)
	}
	if next[1] != keys[0] || next[0] == keys[0] {
		t.Errorf("keys a period later = %x; want a new key, then %x", next, keys[0])
	}
	// Another CA, other keys.
	other, err := EnsureCA(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := SessionTicketKeys(other, now); err != nil || k[0] == keys[0] {
		t.Errorf("another CA's key = %x, %v; want a different key", k, err)
	}
}
