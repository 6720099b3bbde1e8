// Package tlsutil owns the server's TLS material under
// <data-dir>/server/tls/: the cluster CA (ca.crt, ca.key) and the serving
// certificate (server.crt, server.key) it signs, plus CAHash, the
// fingerprint that join tokens carry (SKF1.<CAHash>.<id>.<secret>).
//
// Policy, in one place:
//   - The CA is ECDSA P-256, self-signed, valid for 10 years. EnsureCA loads it
//     or creates it and never overwrites an existing file: a missing half of
//     the pair or a file it cannot parse is an error naming that file, because
//     replacing the CA would orphan every joined agent.
//   - The serving certificate is ECDSA P-256, valid for 1 year (never past the
//     CA), and is derived material: EnsureServerCert re-issues it when it is
//     missing, expires within RenewBefore, is not yet valid, was not signed by
//     the current CA, does not match its key, or does not cover the wanted
//     SANs. Files it cannot parse are still errors naming the file, so a
//     certificate an operator put there is never silently clobbered.
//   - ServerCert holds the serving certificate for a long-running server and
//     renews it in place from tls.Config.GetCertificate.
//
// Every file is written to a temporary file in the same directory, synced,
// given its mode (keys 0600, certificates 0644) and then moved into place,
// so a power cut leaves the old file or the new one, never half of one.
// Time comes from an injected clock.Clock.
//
// This package does file and crypto work only: it serves no HTTP, knows
// nothing of tokens or the store, logs nothing, and uses the standard
// library's crypto alone.
package tlsutil
