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

// TestReleaseStartupPagesAdvisesSmallRandomFaults: after the release the
// executable's read-only mappings carry no-huge-page and random-read
// advice (smaps VmFlags "nh" and "rr"), so that what faults back is the
// page the code needs and not a whole large folio of its neighbours.
func TestReleaseStartupPagesAdvisesSmallRandomFaults(t *testing.T) {
	if _, err := ReleaseStartupPages(); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	// Without transparent huge pages the kernel refuses (and needs no)
	// MADV_NOHUGEPAGE.
	_, err = os.Stat("/sys/kernel/mm/transparent_hugepage")
	thp := err == nil
	var checked int
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && strings.Join(fields[5:], " ") == exe && fields[1][1] != 'w' && fields[1][3] == 'p'
			continue
		}
		if !in {
			continue
		}
		if v, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			flags := " " + v + " "
			if (thp && !strings.Contains(flags, " nh ")) || !strings.Contains(flags, " rr ") {
				t.Errorf("VmFlags of a read-only mapping of the executable = %q; want nh (no huge pages) and rr (random reads)", v)
			}
			checked++
		}
		if v, ok := strings.CutPrefix(line, "FilePmdMapped:"); ok && strings.TrimSpace(v) != "0 kB" {
			t.Errorf("FilePmdMapped = %s after the release; want the executable mapped in small pages", strings.TrimSpace(v))
		}
	}
	if checked == 0 {
		t.Fatalf("no read-only mapping of %s in /proc/self/smaps", exe)
	}
}
