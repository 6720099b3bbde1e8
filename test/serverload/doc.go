// Package serverload proves the skiff server under load and crash, and
// measures it, against the real binary run as a child process.
//
// The tests (run by `go test ./...` and so by `make test`) build
// ./cmd/skiff once per run, start `skiff server --disable-agent` on a
// temporary data dir and a loopback port, and check that every write the
// server acknowledged over HTTPS survives SIGKILL.
//
// The benchmarks run only with -bench:
//
//	go test ./test/serverload -run '^$' -bench . -benchtime 1x -timeout 30m
//
// They report creates/s over HTTPS, assignment delivery latency to 1 000
// agent watch streams, and the server's RSS and CPU idle and with 1 000
// heartbeating nodes; the -serverload.* flags size them. Every request
// goes to 127.0.0.1 only. The package holds no code besides its tests and
// must not be imported.
package serverload
