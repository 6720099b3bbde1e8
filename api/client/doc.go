// Package client is skiff's Go client for the REST API: typed CRUD, watch
// and log calls over HTTPS with the cluster CA pinned and a bearer token,
// plus the client config file that tells the CLI where the server is.
//
// It owns the URL layout of the REST API (paths.go) and the translation of non-2xx
// answers into *api.StatusError, so callers branch with api.IsNotFound and
// friends instead of HTTP codes. It depends only on package api and the
// standard library (plus sigs.k8s.io/yaml for the config file); it must
// never import server, storage or agent code, and it never logs: in
// particular the bearer token appears only in the Authorization header,
// never in an error, a String method or a log line.
//
// # Client config file
//
// The server writes <data-dir>/server/skiff.yaml (mode 0600) with
// WriteConfig; the CLI finds it with ResolveConfigPath and reads it with
// LoadConfig. It is YAML with these keys:
//
//	server: https://127.0.0.1:7443           # required, https only
//	certificate-authority-data: LS0tLS1C...  # base64 of the CA PEM, or
//	certificate-authority: tls/ca.crt        # a PEM file, relative to this file
//	token: 3f1c...                           # bearer token, optional
//	timeout: 30s                             # per-request limit, optional
//
// Exactly one of certificate-authority-data and certificate-authority must
// be set. Unknown keys are an error, so a typo cannot silently drop the CA.
//
// # Concurrency
//
// A *Client is safe for concurrent use by many goroutines and holds no
// per-call state; a *Watcher belongs to the one goroutine reading it.
package client
