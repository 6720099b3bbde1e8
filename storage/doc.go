// Package storage is skiff's state store: every API object, a change log
// of every write, and watches over it, in one embedded SQLite file
// (modernc.org/sqlite, pure Go) in place of etcd, or in a PostgreSQL
// database (jackc/pgx, pure Go) that several servers share.
//
// # What it owns
//
// A Store owns its database file (and the file's -wal, -shm and .lock
// companions): nothing else may open them while it runs. It keeps
//
//   - objects: the live objects, one row per (resource, namespace, name),
//     with the labels and selectable fields beside the JSON so lists and
//     watches filter without decoding;
//   - changes: the change log, one row per revision. A single global
//     revision, counted from 1 without gaps, is every object's
//     metadata.resourceVersion (in decimal);
//   - meta: the current and the compacted revision;
//   - claims: unique strings objects hold beside their keys
//     (Options.Claims: a Service's cluster IP and node ports), checked and
//     written in the write's transaction, so no two objects hold one
//     (claims.go).
//
// Stored values are the objects' JSON with apiVersion, kind and
// resourceVersion set, so the server can send them as they are (GetRaw,
// ListRaw, Event.Value). The values of Options.SealedResources (Secrets)
// are sealed by Options.Sealer as they are written to SQLite and unsealed
// as they are read, so they never reach the file in the clear; in memory
// they are plain. A space reserve file (<db>.reserve) lets writes under
// UseReserve (deletes) succeed once on a full disk.
//
// # Writes
//
// One writer goroutine owns the only writing connection. Create, Update,
// GuaranteedUpdate and Delete queue an op and wait; the writer takes every
// queued op (up to Options.MaxBatch), runs them in order in one
// transaction (each sees the ones before it; a failed precondition fails
// only its op), commits with one fsync (synchronous=FULL: acknowledged
// writes survive kill -9 and power loss), publishes the changes to watchers
// in revision order, then answers. A failed commit fails the whole group
// and leaves the revision unchanged. CreateBatch and UpdateBatch hand the
// writer many objects from one goroutine (a controller's pods, a
// scheduler's bindings) as one transaction per MaxBatch; the writer takes
// them before the single writes queued, in turns. Under LowPriority
// (events) a batch waits until nothing else is queued, or 5 s. On SQLite the
// writer's statements and point reads run under contexts that cannot end:
// the driver starts a goroutine per statement to watch any other.
//
// # Watches
//
// Watch never polls. The writer pushes committed changes to a broadcaster
// which appends them, without blocking, to each interested watcher's queue;
// a watcher more than Options.WatchBuffer events behind is cut off with
// ErrTooSlow. A watch from an older revision replays first: from an
// in-memory ring of recent changes when it reaches back far enough, else
// from the change log. Open warms the ring from the change log's newest
// entries, so the watches a fleet resumes after a server restart replay
// from memory. Selectors are applied as the Kubernetes watch cache does:
// an object that starts or stops matching is Added or Deleted.
// A ChangeHook (AddChangeHook) is told of every change synchronously, on
// the publishing goroutine before the writer is answered, for caches that
// must never lag a write already answered.
//
// A consumer pulls a watch's events with Watcher.Next in its own
// goroutine (the API server's streams: one goroutine per watch in all),
// or reads Watcher.Events, which starts a forwarding goroutine.
//
// # Disk use
//
// Compaction deletes change-log rows that are both older than
// Options.CompactMinAge and not among the newest
// Options.CompactMinRevisions, then returns free pages to the file system
// (auto_vacuum=INCREMENTAL) and truncates the write-ahead log, so the file
// stays proportional to the live data and the retained history.
//
// # Backends
//
// A small backend interface (backend.go) is all that differs: the
// connections, the SQL dialect and the framing of a write transaction.
// sqliteBackend locks its file; one process owns it. pgBackend shares its
// database: a write transaction locks the revision rows first, so
// revisions stay gap-free and in commit order across servers; a batch is
// read in one query and written in one pipeline; each commit NOTIFYs and
// every Store follows the change log (LISTEN, plus a poll every
// Options.PollInterval) into its own broadcaster. Leases with fencing
// (lease.go) elect one leader among servers; shared blobs and a liveness
// table (shared.go) carry what servers must agree on outside the object
// model. On SQLite those are pass-throughs.
//
// # What it must not do
//
// The package stores what it is given: it does not validate, default,
// assign UIDs or timestamps, or apply any API policy; that is the server's.
// It depends only on the api packages, internal/clock and the two
// database drivers.
package storage
