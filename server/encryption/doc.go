// Package encryption keeps the key ring that seals Secrets at rest: the
// AES-256-GCM keys in <data-dir>/server/encryption.key (mode 0600), the
// first of which encrypts while every one decrypts, and the
// storage.Sealer over them. It owns that file; rotation (skiff server
// rotate-key) adds a key in front, re-seals the store, then drops the old
// ones. It knows nothing of HTTP or of the API.
package encryption
