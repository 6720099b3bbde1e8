package footprint

import (
	"bufio"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyRanges(t *testing.T) {
	const exe = "/usr/bin/skiff agent"
	maps := `00400000-01500000 r-xp 00000000 08:01 123 /usr/bin/skiff agent
01500000-027a6000 r--p 01100000 08:01 123 /usr/bin/skiff agent
027a6000-02879000 rw-p 023a6000 08:01 123 /usr/bin/skiff agent
02879000-048ce000 rw-p 00000000 00:00 0
7f0000000000-7f0000001000 r--s 00000000 08:01 456 /usr/bin/skiff agent
7f0000002000-7f0000003000 r--p 00000000 08:01 789 /usr/lib/other.so
7ffdaa79c000-7ffdaa7bd000 rw-p 00000000 00:00 0 [stack]
`
	got, err := readOnlyRanges([]byte(maps), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []addrRange{{0x400000, 0x1500000}, {0x1500000, 0x27a6000}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ranges = %x; want the private read-only mappings of the executable %x", got, want)
	}
	for _, bad := range []string{"zz-01 r-xp 0 0 0 " + exe, "0500-0400 r-xp 0 0 0 " + exe, "0400 r-xp 0 0 0 " + exe} {
		if _, err := readOnlyRanges([]byte(bad+"\n"), exe); err == nil {
			t.Errorf("readOnlyRanges(%q) = nil error; want the bad line refused", bad)
		}
	}
}

// exeRSS sums the resident kB of this process's private read-only
// mappings of its executable, from /proc/self/smaps.
func exeRSS(t *testing.T) int64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sum int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.Join(fields[5:], " ") == exe && fields[1][1] != 'w' && fields[1][3] == 'p'
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			kb, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += kb
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestReleaseStartupPagesUnmapsResidentText: after the release, less of
// the test binary's text and read-only data is resident than before, and
// the process runs on (its code faults back in).
func TestReleaseStartupPagesUnmapsResidentText(t *testing.T) {
	before := exeRSS(t)
	n, err := ReleaseStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := exeRSS(t)
	t.Logf("advised %d KiB; resident read-only pages of the binary %d KiB → %d KiB", n>>10, before, after)
	if n == 0 || after >= before {
		t.Fatalf("advised %d bytes; resident %d KiB → %d KiB; want fewer after", n, before, after)
	}
	if got := strings.Repeat("ok", 2); got != "okok" { // code still runs
		t.Fatal(got)
	}
}
