// Package kubectl holds the end-to-end suite that runs the real kubectl
// binary (the version SPEC.md promises: 1.32) against a real skiff server
// started in-process on 127.0.0.1:0 with a fresh SQLite data dir, using
// the kubeconfig the server writes. It checks what kubectl prints, against
// the headers and messages Kubernetes itself prints, so that scripts
// written for Kubernetes carry over.
//
// kubectl must be on PATH; without it the suite fails (it does not skip)
// and says how to install it. The package has no non-test code; it must
// not import anything of skiff but the server (to start it) and api.
package kubectl
