package storage

import "testing"

func TestPublishedSkipsOnlyKnownRevisions(t *testing.T) {
	for _, tc := range []struct {
		payload string
		rev     int64
		want    bool
	}{
		{"5", 5, true}, {"4", 5, true}, {"6", 5, false}, {"", 5, false}, {"x", 5, false},
	} {
		if got := published(tc.payload, tc.rev); got != tc.want {
			t.Errorf("published(%q, %d) = %v; want %v", tc.payload, tc.rev, got, tc.want)
		}
	}
}
