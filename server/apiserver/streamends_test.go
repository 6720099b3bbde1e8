package apiserver

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// TestWhyStreamEnded: a stream whose write deadline passed ended for
// "write" even though HTTP/2's reset also ended its request; one whose
// request ended before its deadline was closed by its client.
func TestWhyStreamEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("GET", WatchesPath, nil).WithContext(ctx)
	for _, tc := range []struct {
		name string
		at   time.Time
		want int
	}{
		{"deadline passed", time.Now().Add(-time.Second), endWrite},
		{"deadline ahead", time.Now().Add(time.Minute), endClient},
		{"no deadline yet", time.Time{}, endClient},
	} {
		st := &watchStream{r: r, deadline: watchDeadline{at: tc.at}}
		if got := st.whyEnded(); got != tc.want {
			t.Errorf("%s: whyEnded = %s; want %s", tc.name, StreamEndReasons[got], StreamEndReasons[tc.want])
		}
	}
	live := httptest.NewRequest("GET", WatchesPath, nil)
	if got := (&watchStream{r: live}).whyEnded(); got != endWrite {
		t.Errorf("a live request whose write failed: whyEnded = %s; want write", StreamEndReasons[got])
	}
}
