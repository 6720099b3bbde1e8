package cgroups

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The stats readers run for every pod every second (eviction, the PLEG):
// they read a cgroup's files without building what they do not return
// (no map of every memory.stat key, no entry for every control file of a
// directory).

// readKeys reads a "key value" per line file (memory.stat, memory.events,
// cpu.stat, memory.oom_control) and returns the values of keys, in
// order; a key the file lacks, or whose line does not parse, reads 0 and
// is not marked in found.
func readKeys(file string, keys ...string) (vals []uint64, found []bool, err error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	vals, found = make([]uint64, len(keys)), make([]bool, len(keys))
	parseKeys(b, keys, vals, found)
	return vals, found, nil
}

// parseKeys fills vals and found (len(keys) each) from the "key value"
// lines of b.
func parseKeys(b []byte, keys []string, vals []uint64, found []bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			continue
		}
		for i, key := range keys {
			if found[i] || string(k) != key {
				continue
			}
			if n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64); err == nil {
				vals[i], found[i] = n, true
			}
			break
		}
	}
}

// direntBufSize is the getdents buffer: a cgroup directory's entries
// (a few dozen control files) fit in one or two reads.
const direntBufSize = 8 << 10

// subdirs lists the directories in dir (no "." or ".."); a missing dir
// has none. It reads the directory with getdents and keeps the names of
// the entries whose type is a directory (an entry of unknown type is
// looked up), so the control files cost no allocation.
func subdirs(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	buf := make([]byte, direntBufSize)
	var out []string
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Getdents(int(fd), buf)
			return rerr != syscall.EAGAIN
		}); err != nil {
			return nil, fmt.Errorf("read %s: %w", dir, err)
		}
		if rerr == syscall.EINTR {
			continue
		}
		if rerr != nil {
			return nil, fmt.Errorf("read %s: %w", dir, rerr)
		}
		if n <= 0 {
			slices.Sort(out) // as os.ReadDir
			return out, nil
		}
		var unknown []string
		out, unknown = appendDirents(out, unknown, buf[:n])
		for _, name := range unknown {
			if fi, err := os.Lstat(dir + "/" + name); err == nil && fi.IsDir() {
				out = append(out, name)
			}
		}
	}
}

// appendDirents appends to dirs the names of the directory entries in b
// (linux_dirent64 records, as getdents64 returns them) that are
// directories, and to unknown those of DT_UNKNOWN type; "." and ".." are
// left out. A truncated or malformed record ends the walk.
func appendDirents(dirs, unknown []string, b []byte) ([]string, []string) {
	const nameOff = 19 // ino 8, off 8, reclen 2, type 1
	for len(b) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameOff || reclen > len(b) {
			break
		}
		typ, name := b[18], b[nameOff:reclen]
		b = b[reclen:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		switch typ {
		case unix.DT_DIR:
			dirs = append(dirs, string(name))
		case unix.DT_UNKNOWN:
			unknown = append(unknown, string(name))
		}
	}
	return dirs, unknown
}
