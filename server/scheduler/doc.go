// Package scheduler is skiff's built-in scheduler: it binds pending pods to
// nodes, following kube-scheduler's design in a leaner form.
//
// # Shape
//
// Two informers (informer.go) list and then watch pods and nodes in the
// store and hand decoded objects, already turned into PodInfo, to the
// scheduling loop. Each reads its watch into an unbounded queue so the
// store never cuts it off as too slow. The pod watch's events for this
// scheduler's own binds are not decoded: the binder announces each bind
// and its outcome, and the informer hands the loop the object it wrote
// (selfbind.go). The loop (scheduler.go) is one goroutine that owns the
// Cache (nodes with their requested resources, ports, images, conditions,
// taints and labels, plus the pods assumed on them) and the Queue (active
// heap by priority then age, backoff, unschedulable set): nothing else
// touches them, so they need no locks and a scheduling cycle sees a stable
// view without copying a snapshot.
//
// A cycle (cycle.go) is a pure decision: Algorithm.Schedule filters
// (filters.go) and scores (scores.go) the nodes in parallel, stopping
// after enough feasible nodes on large clusters, and picks the best,
// breaking ties with a shuffle seeded from the pod's UID so a decision can
// be replayed. Pods with the same scheduling inputs form an equivalence
// class (equiv.go): the Cache keeps each class's filter verdicts and raw
// scores per node, stamped with the generations of the node state they
// read, so the next pod of a ReplicaSet reuses them and recomputes only
// what a bind or a node update changed; decisions are the same as
// without it. Rejections are data (Reason), turned into the Kubernetes
// message form only at the edge (FitError). When nothing fits,
// Algorithm.Preempt (preempt.go) looks for the node where evicting the
// fewest, lowest-priority pods makes room.
//
// Effects sit behind the loop: the pod is assumed in the cache, then bound
// asynchronously (bind.go) by binders that write every bind ready at that
// moment to the store, 1,024 per storage.Store.UpdateBatch (one
// transaction), each with a resourceVersion precondition. The watch confirms the assumption; a
// failed bind forgets it and re-queues the pod. Events and status writes
// go through a bounded asynchronous queue so they never slow a cycle; the
// store writes the events when its writer has nothing else queued
// (storage.LowPriority), so a burst of binds is not shared with the
// events about it.
//
// # What it must not do
//
// It never queries the database inside the scheduling loop, never writes
// anything but pod bindings, pod status (PodScheduled, nominatedNodeName),
// graceful deletion of preemption victims, and events; and it does not
// import other server packages (the caller wires events and liveness in
// through Config).
package scheduler
