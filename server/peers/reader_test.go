package peers

import (
	"net/url"
	"strconv"
	"testing"
)

// TestReaderResumesWhereItsLinesEnd: a Reader's lines are a stream's,
// and the resume query after them starts a stream that misses nothing
// and repeats nothing, however the Reader started.
func TestReaderResumesWhereItsLinesEnd(t *testing.T) {
	st := openStore(t, "")
	create(t, st, node("n0", "10.42.0.0/24", "192.168.0.1"))
	f := startFeed(t, st, 0)

	// From nothing: the whole set, then where that leaves the caller.
	r := f.NewReader(-1, "")
	lines, resume, wake := r.Next()
	bs := decodeLines(t, lines)
	if len(bs) != 1 || !bs[0].Full || len(bs[0].Peers) != 1 {
		t.Fatalf("first lines = %+v; want the whole set of one", bs)
	}
	q, _ := url.ParseQuery(resume)
	if q.Get("since") != strconv.FormatInt(bs[0].Revision, 10) || q.Get("hash") != bs[0].Hash {
		t.Fatalf("resume = %q; want since=%d&hash=%s", resume, bs[0].Revision, bs[0].Hash)
	}
	select {
	case <-wake:
		t.Fatal("wake is closed with nothing new")
	default:
	}

	// A change, sealed: the Reader is woken and hands the batch out.
	create(t, st, node("n1", "10.42.1.0/24", "192.168.0.2"))
	caughtUp(t, f, st)
	f.seal()
	<-wake
	lines, resume, _ = r.Next()
	bs = decodeLines(t, lines)
	if len(bs) != 1 || bs[0].Full || len(bs[0].Peers) != 1 || bs[0].Peers[0].Name != "n1" {
		t.Fatalf("after n1 = %+v; want one batch with n1", bs)
	}
	q, _ = url.ParseQuery(resume)
	if q.Get("since") != strconv.FormatInt(bs[0].Revision, 10) || q.Get("hash") != bs[0].Hash {
		t.Fatalf("resume = %q; want since=%d&hash=%s", resume, bs[0].Revision, bs[0].Hash)
	}

	// A stream resuming there gets an empty batch: nothing again.
	since, _ := strconv.ParseInt(q.Get("since"), 10, 64)
	lines, again, _ := f.NewReader(since, q.Get("hash")).Next()
	bs = decodeLines(t, lines)
	if len(bs) != 1 || bs[0].Full || len(bs[0].Peers) != 0 || again != resume {
		t.Fatalf("resumed = %+v, resume %q; want one empty batch and the same resume %q", bs, again, resume)
	}
	// Resuming from a revision the feed no longer keeps, with the right
	// hash, is an empty batch too (a restarted server).
	lines, _, _ = f.NewReader(0, q.Get("hash")).Next()
	if bs = decodeLines(t, lines); len(bs) != 1 || bs[0].Full || len(bs[0].Peers) != 0 {
		t.Fatalf("resumed from 0 with the set's hash = %+v; want an empty batch", bs)
	}
}

// TestReaderWaitsForTheFirstSeal: before the feed is ready a Reader
// hands out nothing and is woken by the first seal.
func TestReaderWaitsForTheFirstSeal(t *testing.T) {
	f := New(Config{Store: openStore(t, "")})
	lines, resume, wake := f.NewReader(-1, "").Next()
	if len(lines) != 0 || resume != "" || wake != f.ready {
		t.Fatalf("Next before ready = %d lines, %q; want none, waiting for ready", len(lines), resume)
	}
}
