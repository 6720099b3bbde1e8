package client

import (
	"context"
	"errors"
	"testing"
)

// TestListThenWatch: it lists only without a version, resumes from the
// version it is given, and reports progress for a list that worked or
// an event, not for a watch that ended with none.
func TestListThenWatch(t *testing.T) {
	ctx := context.Background()
	lists := 0
	list := func(context.Context) (string, error) { lists++; return "10", nil }
	failList := func(context.Context) (string, error) { lists++; return "", errors.New("down") }
	var from string
	watch := func(events int) func(context.Context, string) (string, int, error) {
		return func(_ context.Context, rv string) (string, int, error) {
			from = rv
			return "1" + rv, events, errors.New("ended")
		}
	}
	rv, listed, progressed, err := ListThenWatch(ctx, "", list, watch(0))
	if rv != "110" || !listed || !progressed || err == nil || from != "10" || lists != 1 {
		t.Fatalf("from nothing: rv %q listed %v progressed %v err %v (watched from %q, %d lists)", rv, listed, progressed, err, from, lists)
	}
	rv, listed, progressed, _ = ListThenWatch(ctx, "42", list, watch(0))
	if rv != "142" || listed || progressed || from != "42" || lists != 1 {
		t.Fatalf("resumed, no events: rv %q listed %v progressed %v (watched from %q, %d lists)", rv, listed, progressed, from, lists)
	}
	if _, _, progressed, _ = ListThenWatch(ctx, "42", list, watch(3)); !progressed {
		t.Fatal("a resumed watch with events made no progress")
	}
	rv, listed, progressed, err = ListThenWatch(ctx, "", failList, watch(3))
	if rv != "" || !listed || progressed || err == nil || lists != 2 {
		t.Fatalf("failed list: rv %q listed %v progressed %v err %v", rv, listed, progressed, err)
	}
}
