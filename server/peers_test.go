package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
	"github.com/skiffhq/skiff/internal/peerfeed"
)

// openPeerFeed opens the feed as token and returns its batches as they
// come; the stream closes when the test ends.
func openPeerFeed(t *testing.T, h *harness, token, query string) <-chan peerfeed.Batch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.info.URL+peerfeed.Path+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	c := *h.client
	c.Timeout = 0 // a stream
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("peer feed as a node = %d; want 200", resp.StatusCode)
	}
	out := make(chan peerfeed.Batch, 16)
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var b peerfeed.Batch
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
				t.Errorf("peer feed line %q: %v", sc.Text(), err)
				return
			}
			out <- b
		}
	}()
	return out
}

// nextBatch steps the fake clock a second at a time (each a seal) until
// a batch arrives.
func nextBatch(t *testing.T, h *harness, feed <-chan peerfeed.Batch) peerfeed.Batch {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case b := <-feed:
			return b
		case <-deadline:
			t.Fatal("no peer feed batch within 20s")
		case <-time.After(20 * time.Millisecond):
			h.clk.Advance(time.Second)
		}
	}
}

func peerNames(ps []peerfeed.Peer) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// TestPeerFeedRealTLS: a node streams every Node's Peer (the whole set,
// then one batch per change, and nothing for a write that changes no
// Peer); anonymous callers, bad credentials and users who may not watch
// Nodes are refused; a bad since is a 400.
func TestPeerFeedRealTLS(t *testing.T) {
	h := startHarness(t, "", nil)
	admin := h.adminToken()
	_, credA := h.join(h.joinToken(), "a", "")
	h.mustDo("POST", "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"spec":{"podCIDR":"10.42.1.0/24"}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/nodes", admin, fmt.Sprintf(nodeJSON, "b"), http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/serviceaccounts", admin, `{"metadata":{"name":"nobody"}}`, http.StatusCreated)
	b := h.mustDo("POST", "/api/v1/namespaces/default/serviceaccounts/nobody/token", admin, `{"spec":{"expirationSeconds":3600}}`, http.StatusCreated)
	var tr api.TokenRequest
	if err := json.Unmarshal(b, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("TokenRequest answer %s: %v", b, err)
	}
	for _, tc := range []struct {
		name, token, query string
		want               int
	}{
		{"anonymous", "", "", http.StatusUnauthorized},
		{"a wrong credential", credA + "x", "", http.StatusUnauthorized},
		{"a user without a role", tr.Status.Token, "", http.StatusForbidden},
		{"node a, since not a number", credA, "?since=abc", http.StatusBadRequest},
		{"node a, since negative", credA, "?since=-4", http.StatusBadRequest},
	} {
		if code, body := h.do("GET", peerfeed.Path+tc.query, tc.token, ""); code != tc.want {
			t.Errorf("peer feed as %s = %d %s; want %d", tc.name, code, body, tc.want)
		}
	}
	if code, _ := h.do("POST", peerfeed.Path, credA, `{}`); code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
		t.Errorf("POST to the peer feed = %d; want 404 or 405", code)
	}

	feed := openPeerFeed(t, h, credA, "")
	first := nextBatch(t, h, feed)
	if !first.Full || fmt.Sprint(peerNames(first.Peers)) != "[a b]" || first.Peers[0].PodCIDR != "10.42.1.0/24" {
		t.Fatalf("first batch %+v; want the whole set: a (10.42.1.0/24) and b", first)
	}
	var set peerfeed.Set
	if err := set.Apply(first); err != nil {
		t.Fatal(err)
	}
	// A label changes no Peer: no batch. A new Node is one.
	h.mustDo("PATCH", "/api/v1/nodes/b", admin, `{"metadata":{"labels":{"x":"y"}}}`, http.StatusOK)
	h.mustDo("POST", "/api/v1/nodes", admin, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"c"},"spec":{"podCIDR":"10.42.3.0/24"}}`, http.StatusCreated)
	next := nextBatch(t, h, feed)
	if next.Full || fmt.Sprint(peerNames(next.Peers)) != "[c]" || len(next.Deleted) != 0 {
		t.Fatalf("batch after the label and node c: %+v; want c alone", next)
	}
	if err := set.Apply(next); err != nil {
		t.Fatal(err)
	}
	h.mustDo("DELETE", "/api/v1/nodes/a", admin, "", http.StatusOK)
	gone := nextBatch(t, h, feed)
	if fmt.Sprint(gone.Deleted) != "[a]" || len(gone.Peers) != 0 || gone.Revision <= next.Revision {
		t.Fatalf("batch after deleting a: %+v; want a deleted, at a later revision than %d", gone, next.Revision)
	}
	if err := set.Apply(gone); err != nil {
		t.Fatal(err)
	}

	// Resuming from the last batch's revision with the set's hash: an
	// empty batch, not the whole set.
	resumed := nextBatch(t, h, openPeerFeed(t, h, credA, fmt.Sprintf("?since=%d&hash=%s", gone.Revision, set.Hash())))
	if resumed.Full || len(resumed.Peers)+len(resumed.Deleted) != 0 || resumed.Hash != set.Hash() {
		t.Fatalf("resumed stream's first batch %+v; want an empty one with hash %s", resumed, set.Hash())
	}
	// The admin may stream it too.
	if b := nextBatch(t, h, openPeerFeed(t, h, admin, "")); !b.Full || fmt.Sprint(peerNames(b.Peers)) != "[b c]" {
		t.Fatalf("the admin's first batch %+v; want the whole set b, c", b)
	}
}
