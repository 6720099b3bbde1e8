package tlsutil

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestServerCertRenewsInPlace(t *testing.T) {
	f := newFixture(t)
	sc, err := NewServerCert(f.dir, f.ca, SANs{}, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	first, err := sc.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(ServerCertValidity - RenewBefore - time.Hour)
	if c, _ := sc.GetCertificate(nil); c != first {
		t.Fatal("GetCertificate renewed before the renewal window")
	}
	f.clk.Advance(time.Hour)
	renewed, err := sc.GetCertificate(nil)
	if err != nil {
		t.Fatalf("GetCertificate in the renewal window: %v", err)
	}
	if renewed == first || bytes.Equal(renewed.Certificate[0], first.Certificate[0]) {
		t.Fatal("GetCertificate did not renew inside the renewal window")
	}
	if !renewed.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Errorf("renewed NotAfter %v not after old %v", renewed.Leaf.NotAfter, first.Leaf.NotAfter)
	}
	if sc.Certificate() != renewed || sc.Err() != nil {
		t.Errorf("Certificate() / Err() = %p / %v; want the renewed one / nil", sc.Certificate(), sc.Err())
	}
}

func TestServerCertKeepsServingWhenRenewalFails(t *testing.T) {
	f := newFixture(t)
	sc, err := NewServerCert(f.dir, f.ca, SANs{}, f.clk)
	if err != nil {
		t.Fatal(err)
	}
	first := sc.Certificate()
	// Renewal will fail: the file is no longer a certificate.
	if err := os.WriteFile(filepath.Join(f.dir, ServerCertFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.clk.Set(first.Leaf.NotAfter.Add(-time.Hour))
	c, err := sc.GetCertificate(nil)
	if err != nil || c != first {
		t.Fatalf("GetCertificate while renewal fails and the cert is valid = %p, %v; want the old one, nil", c, err)
	}
	if sc.Err() == nil {
		t.Error("Err() = nil after a failed renewal")
	}
	f.clk.Advance(2 * time.Hour)
	if c, err := sc.GetCertificate(nil); err == nil {
		t.Fatalf("GetCertificate after expiry with renewal failing = %p, nil; want an error", c)
	}
	// Once the cause is gone, the next attempt recovers.
	if err := os.Remove(filepath.Join(f.dir, ServerCertFile)); err != nil {
		t.Fatal(err)
	}
	if c, err := sc.GetCertificate(nil); err != nil || c == first {
		t.Fatalf("GetCertificate after repair = %p, %v; want a new certificate", c, err)
	}
	if sc.Err() != nil {
		t.Errorf("Err() after recovery = %v; want nil", sc.Err())
	}
}
