package containerd

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/containerd/errdefs"

	"github.com/skiffhq/skiff/agent/runtime"
)

// canceledErr is how containerd's client reports a cancelled call from
// the wire (errdefs' cancelled interface).
type canceledErr struct{}

func (canceledErr) Error() string { return "rpc canceled" }
func (canceledErr) Cancelled()    {}

// deadlineErr is how containerd's client reports a deadline from the
// wire (errdefs' deadlineExceeded interface).
type deadlineErr struct{}

func (deadlineErr) Error() string     { return "rpc deadline exceeded" }
func (deadlineErr) DeadlineExceeded() {}

// TestTranslateKeepsBothChains: containerd's errors become runtime's sentinels, and containerd's own
// error stays in the chain.
func TestTranslateKeepsBothChains(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   error
		want error
	}{
		{"not found", fmt.Errorf("container x: %w", errdefs.ErrNotFound), runtime.ErrNotFound},
		{"already exists", errdefs.ErrAlreadyExists, runtime.ErrAlreadyExists},
		{"invalid", errdefs.ErrInvalidArgument, runtime.ErrInvalidConfig},
		{"unavailable", errdefs.ErrUnavailable, runtime.ErrUnavailable},
		{"unavailable, wrapped", fmt.Errorf("connection error: %w", errdefs.ErrUnavailable), runtime.ErrUnavailable},
		{"canceled", canceledErr{}, context.Canceled},
		{"deadline", deadlineErr{}, context.DeadlineExceeded},
	} {
		got := translate("load container c1", tc.in)
		if !errors.Is(got, tc.want) {
			t.Errorf("translate(%s) = %v; want errors.Is %v", tc.name, got, tc.want)
		}
		if !errors.Is(got, tc.in) {
			t.Errorf("translate(%s) = %v; lost containerd's error %v", tc.name, got, tc.in)
		}
	}
	if translate("x", nil) != nil {
		t.Error("translate(nil) != nil")
	}
	other := errors.New("boom")
	if got := translate("x", other); !errors.Is(got, other) || got.Error() != "x: boom" {
		t.Errorf("translate(other) = %v", got)
	}
}
