package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/skiffhq/skiff/api"
)

func TestWatchTimeout(t *testing.T) {
	for _, tt := range []struct {
		seconds int64
		want    time.Duration
	}{
		{1, time.Second},
		{1 << 31, (1 << 31) * time.Second}, // past a 32-bit int
		{math.MaxInt64 / int64(time.Second), time.Duration(math.MaxInt64/int64(time.Second)) * time.Second},
		{math.MaxInt64/int64(time.Second) + 1, math.MaxInt64}, // would wrap negative
		{math.MaxInt64, math.MaxInt64},
	} {
		if got := watchTimeout(tt.seconds); got != tt.want {
			t.Errorf("watchTimeout(%d) = %v; want %v", tt.seconds, got, tt.want)
		}
	}
}

// TestAPIWatchTimeoutSecondsPastInt32 asks for a watch timeout of 10^10
// seconds: past a 32-bit int (armv7 used to answer 400) and past what
// time.Duration holds in seconds (amd64 used to wrap to a negative timer
// and end the stream at once). The stream must stay open, while a small
// timeout still ends it.
func TestAPIWatchTimeoutSecondsPastInt32(t *testing.T) {
	h := newHarness(t)
	base := "/api/v1/namespaces/default/pods"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(timeout string) *bufio.Scanner {
		req, _ := http.NewRequestWithContext(ctx, "GET", h.http.URL+base+"?watch=1&timeoutSeconds="+timeout, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch with timeoutSeconds=%s = %d; want 200", timeout, resp.StatusCode)
		}
		return bufio.NewScanner(resp.Body)
	}
	// Each stream starts with the existing pod; once it is read, the
	// stream's timeout timer is armed.
	h.do("POST", base, "application/json", podJSON)
	short, long := open("30"), open("10000000000")
	for name, sc := range map[string]*bufio.Scanner{"30": short, "10000000000": long} {
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), `{"type":"ADDED"`) {
			t.Fatalf("timeoutSeconds=%s stream's first line = %q (%v); want the existing pod", name, sc.Text(), sc.Err())
		}
	}
	h.clock.Advance(30 * time.Second)
	for short.Scan() { // heartbeats, then the end of the stream
	}
	if err := short.Err(); err != nil {
		t.Fatalf("timeoutSeconds=30 stream: %v; want it ended cleanly", err)
	}
	h.do("POST", base, "application/json", strings.Replace(podJSON, `"name":"web"`, `"name":"later"`, 1))
	for long.Scan() {
		if strings.HasPrefix(long.Text(), `{"type":"ADDED"`) && strings.Contains(long.Text(), `"name":"later"`) {
			return
		}
	}
	t.Fatalf("timeoutSeconds=10000000000 stream ended (%v) before the later pod's ADDED event", long.Err())
}

// TestBookmarkLineReusesItsBuffer: a stream's bookmarks are built in one
// buffer, and each is the JSON a client decodes, for a core and a grouped
// resource.
func TestBookmarkLineReusesItsBuffer(t *testing.T) {
	for _, tc := range []struct {
		resource, want string
	}{
		{"pods", `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"%d"}}}` + "\n"},
		{"deployments", `{"type":"BOOKMARK","object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"resourceVersion":"%d"}}}` + "\n"},
	} {
		res, ok := api.LookupResource(tc.resource)
		if !ok {
			t.Fatalf("no resource %s", tc.resource)
		}
		enc := eventEncoder{res: &res}
		for _, rev := range []int64{9, 1234567890123, 0} {
			got := enc.bookmark(rev)
			if string(got) != fmt.Sprintf(tc.want, rev) {
				t.Errorf("bookmark(%d) of %s = %q", rev, tc.resource, got)
			}
			var ev struct{ Type string }
			if err := json.Unmarshal(got, &ev); err != nil || ev.Type != "BOOKMARK" {
				t.Errorf("bookmark(%d) does not decode: %v", rev, err)
			}
		}
		if n := testing.AllocsPerRun(100, func() { enc.bookmark(42) }); n != 0 {
			t.Errorf("a bookmark allocates %.0f times; want 0", n)
		}
	}
}

// TestEventLineFromPool checks an event's line and that a stream which
// gives each line back allocates none: one buffer an event was 6 % of
// a fleet placement's allocations. A line bigger than maxPooledLine is
// not kept.
func TestEventLineFromPool(t *testing.T) {
	res, ok := api.LookupResource("pods")
	if !ok {
		t.Fatal("no pods")
	}
	enc := eventEncoder{res: &res}
	obj := []byte(`{"kind":"Pod","metadata":{"name":"web"}}`)
	got, err := enc.line(api.Modified, obj)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"MODIFIED","object":` + string(obj) + "}\n"; string(got) != want {
		t.Errorf("line = %q; want %q", got, want)
	}
	enc.release()
	if enc.held != nil {
		t.Error("release kept the buffer")
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := enc.line(api.Added, obj); err != nil {
			t.Fatal(err)
		}
		enc.release()
	}); n != 0 {
		t.Errorf("an event's line allocates %.0f times; want 0", n)
	}
	huge, err := enc.line(api.Added, make([]byte, maxPooledLine))
	if err != nil {
		t.Fatal(err)
	}
	bp := enc.held
	enc.release()
	for range 4 {
		if p := lineBufs.Get().(*[]byte); p == bp || cap(*p) > maxPooledLine {
			t.Fatalf("a %d-byte line's buffer went back to the pool", len(huge))
		}
	}
}

// TestWatchDeadlineRenewsOnlyWhenShort: a stream's write deadline is set
// on its first write, left alone while a write still gets writeTimeout,
// and renewed past the next two heartbeats once it would not; every write,
// and the keep-alive after it, keeps at least writeTimeout.
func TestWatchDeadlineRenewsOnlyWhenShort(t *testing.T) {
	hb := 10 * time.Second
	d := watchDeadline{heartbeat: hb}
	t0 := time.Unix(1_000_000, 0)
	renewals := 0
	// Keep-alives every heartbeat for ten minutes, and a burst of events
	// in between.
	for i := 0; i < 60; i++ {
		for _, off := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond} {
			now := t0.Add(time.Duration(i)*hb + off)
			at, renewed := d.renew(now)
			if renewed {
				renewals++
			}
			if left := at.Sub(now); left < writeTimeout {
				t.Fatalf("write at +%v gets %v; want at least %v", now.Sub(t0), left, writeTimeout)
			}
			if next := now.Add(hb); at.Sub(next) < writeTimeout {
				t.Fatalf("deadline +%v leaves the next keep-alive at +%v less than %v", at.Sub(t0), next.Sub(t0), writeTimeout)
			}
		}
	}
	// 180 writes: renewed on the first and then every other keep-alive.
	if renewals < 25 || renewals > 31 {
		t.Errorf("%d renewals for 180 writes over 60 heartbeats; want about 30", renewals)
	}
}
