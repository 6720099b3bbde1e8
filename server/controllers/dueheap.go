package controllers

import (
	"container/heap"
	"time"
)

// dueHeap orders a Queue's delayed keys by when they are due. An entry is
// live while the queue's waiting map still holds its key at its time; a
// key queued early or delayed to an earlier time leaves a stale entry,
// skipped when it reaches the top and swept when stale ones outnumber
// the live.
type dueHeap struct{ h dueEntries }

type dueEntry struct {
	at  time.Time
	key string
}

type dueEntries []dueEntry

func (h dueEntries) Len() int           { return len(h) }
func (h dueEntries) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueEntries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueEntries) Push(x any)        { *h = append(*h, x.(dueEntry)) }
func (h *dueEntries) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = dueEntry{}
	*h = old[:len(old)-1]
	return e
}

func live(e dueEntry, waiting map[string]time.Time) bool {
	t, ok := waiting[e.key]
	return ok && t.Equal(e.at)
}

// push adds key due at at; waiting is the queue's map, already holding it.
func (d *dueHeap) push(key string, at time.Time, waiting map[string]time.Time) {
	if len(d.h) >= 64 && len(d.h) > 2*len(waiting) {
		d.sweep(waiting)
	}
	heap.Push(&d.h, dueEntry{at: at, key: key})
}

// sweep drops the stale entries.
func (d *dueHeap) sweep(waiting map[string]time.Time) {
	kept := d.h[:0]
	for _, e := range d.h {
		if live(e, waiting) {
			kept = append(kept, e)
		}
	}
	clear(d.h[len(kept):])
	d.h = kept
	heap.Init(&d.h)
}

// peek drops stale entries from the top and returns the earliest live
// one, if any.
func (d *dueHeap) peek(waiting map[string]time.Time) (string, time.Time, bool) {
	for len(d.h) > 0 {
		if e := d.h[0]; live(e, waiting) {
			return e.key, e.at, true
		}
		heap.Pop(&d.h)
	}
	return "", time.Time{}, false
}

// pop removes the top entry.
func (d *dueHeap) pop() { heap.Pop(&d.h) }
