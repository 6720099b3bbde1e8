package footprint

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ReleaseStartupPages drops the process's mappings of the pages of its
// own executable that are never written (text, read-only data, the
// symbol table) — madvise(MADV_DONTNEED), which for such private file
// mappings only unmaps clean page-cache pages — and returns how many
// bytes of address space it advised. Writable mappings (data, heap,
// stacks) are left alone. It is safe at any time: a page used again is
// faulted back from the page cache (or the file) unchanged.
func ReleaseStartupPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("release start-up pages: %w", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("release start-up pages: %w", err)
	}
	ranges, err := readOnlyRanges(maps, exe)
	if err != nil {
		return 0, fmt.Errorf("release start-up pages: %w", err)
	}
	var n int64
	for _, r := range ranges {
		// Random access: a fault reads the one page it needs, no
		// read-ahead of its neighbours.
		for _, advice := range []int{unix.MADV_RANDOM, unix.MADV_DONTNEED} {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(r.start), uintptr(r.end-r.start), uintptr(advice)); errno != 0 {
				return n, fmt.Errorf("release start-up pages: madvise %x-%x: %w", r.start, r.end, errno)
			}
		}
		n += int64(r.end - r.start)
	}
	// The binary's pages no process maps any more leave the page cache,
	// so that fault-around, which maps the cached neighbours of a faulted
	// page, does not map them back.
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return n, fmt.Errorf("release start-up pages: %w", err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return n, fmt.Errorf("release start-up pages: fadvise: %w", err)
	}
	debug.FreeOSMemory()
	return n, nil
}

type addrRange struct{ start, end uint64 }

// readOnlyRanges returns the mappings in maps (the format of
// /proc/<pid>/maps) of the file path that are private and not writable.
func readOnlyRanges(maps []byte, path string) ([]addrRange, error) {
	var out []addrRange
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		perms := f[1]
		if len(perms) != 4 || perms[1] == 'w' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("bad maps line %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("bad maps line %q", sc.Text())
		}
		out = append(out, addrRange{start, end})
	}
	return out, sc.Err()
}
