package local

import (
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	c := Start(t, Options{})
	createPods(t, c, "s", 3)
	s := c.CheckInvariants(60 * time.Second)
	t.Logf("%+v", s)
}
