package footprint

import (
	"bufio"
	"bytes"
	"errors"
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
// mappings only unmaps clean page-cache pages, then MADV_PAGEOUT of the
// large folios faulted back meanwhile — and returns how many
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
	// No huge (PMD) mappings of these ranges from now on: a fault maps
	// page-table entries, never a whole 2 MiB folio (a kernel without
	// transparent huge pages refuses MADV_NOHUGEPAGE with EINVAL: it maps
	// none anyway); random access: a fault of read-only data reads the
	// one page it needs, no read-ahead of its neighbours; then drop what
	// is mapped.
	if _, err := advise(ranges, unix.MADV_NOHUGEPAGE); err != nil && !errors.Is(err, unix.EINVAL) {
		return 0, err
	}
	n, err := advise(ranges, unix.MADV_RANDOM, unix.MADV_DONTNEED)
	if err != nil {
		return n, err
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
	// The code that ran between the two calls (this one, the runtime,
	// other goroutines) faulted its pages back, and with them the whole
	// large folio each page is part of (the page cache reads an
	// executable in folios of up to 2 MiB, and a folio some process maps
	// cannot be dropped): reclaim those folios (MADV_PAGEOUT evicts the
	// clean file pages only this process maps, folio and all), so that
	// the next fault maps small pages, not a 2 MiB folio. (Kernels
	// before 5.4 have no MADV_PAGEOUT: EINVAL.) Splitting a folio to
	// reclaim the pages this process mapped leaves its other pages cached
	// and mapped by no one: the second fadvise drops them.
	if _, err := advise(ranges, unix.MADV_PAGEOUT); err != nil && !errors.Is(err, unix.EINVAL) {
		return n, err
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return n, fmt.Errorf("release start-up pages: fadvise: %w", err)
	}
	debug.FreeOSMemory()
	return n, nil
}

// advise applies each advice in turn to every range and returns the bytes
// of address space advised.
func advise(ranges []addrRange, advice ...int) (int64, error) {
	var n int64
	for _, r := range ranges {
		for _, a := range advice {
			if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(r.start), uintptr(r.end-r.start), uintptr(a)); errno != 0 {
				return n, fmt.Errorf("release start-up pages: madvise(%d) %x-%x: %w", a, r.start, r.end, errno)
			}
		}
		n += int64(r.end - r.start)
	}
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
