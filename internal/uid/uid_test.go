package uid

import (
	"regexp"
	"testing"
)

func TestNewIsAVersion4UUIDAndUnique(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		u := New()
		if !re.MatchString(u) {
			t.Fatalf("%q is not a version 4 UUID", u)
		}
		if seen[u] {
			t.Fatalf("%q repeated", u)
		}
		seen[u] = true
	}
}
