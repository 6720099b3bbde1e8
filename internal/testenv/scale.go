package testenv

import (
	"os"
	"strconv"
	"time"
)

// ScaleEnv names the environment variable that multiplies the real-time
// bounds of integration tests (Bound). make test-vm sets it inside its
// emulated VM, and scripts/test-arm (3 unless set) for the binaries it
// runs under qemu-user beside each other, where everything runs several
// times slower than on the host.
const ScaleEnv = "SKIFF_TEST_TIMEOUT_SCALE"

// Bound returns d, a test's upper bound on real time (how long to wait
// for a container or a pod before failing), multiplied by ScaleEnv when
// that is a whole number from 2 to 20. It never paces a test: only
// waits that end as soon as their condition holds may use it.
func Bound(d time.Duration) time.Duration {
	n, err := strconv.Atoi(os.Getenv(ScaleEnv))
	if err != nil || n < 2 || n > 20 {
		return d
	}
	return d * time.Duration(n)
}
