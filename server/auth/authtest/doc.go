// Package authtest holds fixtures for tests of auth and of the server code
// that uses it: MemSecretStore, an in-memory auth.SecretStore. It is for
// tests only and must not be imported by production code.
package authtest
