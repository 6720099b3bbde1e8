package tlsutil

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"strconv"
	"time"
)

// TicketKeyPeriod is how long one TLS session ticket key seals new
// tickets. SessionTicketKeys also keeps the previous period's key, so a
// ticket opens for one to two periods after it was issued.
const TicketKeyPeriod = 24 * time.Hour

// SessionTicketKeys returns the keys for tls.Config.SetSessionTicketKeys
// at now: the current period's first (it seals new tickets), then the
// previous period's (its tickets still open).
//
// The keys are derived from the CA's private key (HKDF-SHA256, one label
// per period), so they survive a restart and are the same on every
// server that shares the CA: an agent reconnecting to a restarted server,
// or failing over to another one, resumes its TLS session instead of
// running a full handshake. Resumption skips the server's signature and
// the agent's verification of the certificate chain, and does not send
// the chain; the key exchange still runs (Go offers only resumption with
// a fresh key exchange), so forward secrecy is kept. Nothing new has to
// be kept secret: whoever holds the CA key can already impersonate the
// server.
func SessionTicketKeys(ca *CA, now time.Time) ([][32]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		return nil, fmt.Errorf("tls: session ticket keys: %w", err)
	}
	period := now.UTC().Unix() / int64(TicketKeyPeriod/time.Second)
	keys := make([][32]byte, 2)
	for i := range keys {
		k, err := hkdf.Key(sha256.New, der, nil, "skiff tls session ticket key "+strconv.FormatInt(period-int64(i), 10), 32)
		if err != nil {
			return nil, fmt.Errorf("tls: session ticket keys: %w", err)
		}
		copy(keys[i][:], k)
	}
	return keys, nil
}
