// Package footprint trims what a long-running skiff process keeps
// resident after it has started.
//
// The single skiff binary links the server, the agent and the CLI, and Go
// runs every linked package's init at start-up, spread over the whole
// text segment; with the kernel's fault-around each one maps 64 KiB of
// the binary, so a just-started process has most of its text and
// read-only data resident although its steady state runs a small part of
// it. ReleaseStartupPages unmaps those clean, file-backed pages once
// start-up is over, and the page cache's copies no process maps any more;
// the code that keeps running faults its pages back, one small page at a
// time (no huge mappings, no read-ahead of read-only data), where before
// a fault could map a whole 2 MiB folio of the page cache.
package footprint
