package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// entry is one file of the initramfs: a directory, a symlink (link), a
// character device (dev), a regular file copied from the host (src) or
// with content body.
type entry struct {
	mode fs.FileMode
	src  string
	body []byte
	link string
	dev  [2]uint32 // major, minor of a character device
}

// tree is the initramfs being built, keyed by clean absolute path.
type tree map[string]*entry

// dir adds p and its parents as directories (existing entries stay).
func (t tree) dir(p string) {
	for p != "/" && p != "." {
		if _, ok := t[p]; ok {
			return
		}
		t[p] = &entry{mode: fs.ModeDir | 0o755}
		p = path.Dir(p)
	}
}

func (t tree) put(p string, e *entry) {
	p = path.Clean("/" + p)
	t.dir(path.Dir(p))
	t[p] = e
}

// file adds a file with content body.
func (t tree) file(p string, mode fs.FileMode, body []byte) {
	t.put(p, &entry{mode: mode, body: body})
}

// symlink adds p pointing at target.
func (t tree) symlink(p, target string) { t.put(p, &entry{mode: fs.ModeSymlink | 0o777, link: target}) }

// writeCPIO writes t as a newc ("070701") cpio archive, the format the
// kernel unpacks as an initramfs, parents before their children.
func writeCPIO(w io.Writer, t tree) error {
	names := make([]string, 0, len(t))
	for p := range t {
		names = append(names, p)
	}
	sort.Strings(names) // a parent sorts before everything under it
	bw := bufio.NewWriterSize(w, 1<<20)
	ino := uint32(1)
	for _, p := range names {
		e := t[p]
		if err := writeEntry(bw, ino, strings.TrimPrefix(p, "/"), e); err != nil {
			return fmt.Errorf("cpio %s: %w", p, err)
		}
		ino++
	}
	if err := writeHeader(bw, 0, "TRAILER!!!", 0, 0, [2]uint32{}); err != nil {
		return err
	}
	return bw.Flush()
}

// cpio mode bits (the values of stat's S_IF*).
const (
	cpioDir  = 0o040000
	cpioReg  = 0o100000
	cpioLink = 0o120000
	cpioChr  = 0o020000
)

func writeEntry(w *bufio.Writer, ino uint32, name string, e *entry) error {
	perm := uint32(e.mode.Perm())
	if e.mode&fs.ModeSticky != 0 {
		perm |= 0o1000
	}
	switch {
	case e.mode.IsDir():
		return writeHeader(w, ino, name, cpioDir|perm, 0, [2]uint32{})
	case e.mode&fs.ModeSymlink != 0:
		if err := writeHeader(w, ino, name, cpioLink|perm, uint32(len(e.link)), [2]uint32{}); err != nil {
			return err
		}
		return writePadded(w, []byte(e.link))
	case e.mode&fs.ModeCharDevice != 0:
		return writeHeader(w, ino, name, cpioChr|perm, 0, e.dev)
	}
	if e.src == "" {
		if err := writeHeader(w, ino, name, cpioReg|perm, uint32(len(e.body)), [2]uint32{}); err != nil {
			return err
		}
		return writePadded(w, e.body)
	}
	f, err := os.Open(e.src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() >= 1<<32 {
		return fmt.Errorf("%s is too large for cpio", e.src)
	}
	if err := writeHeader(w, ino, name, cpioReg|perm, uint32(st.Size()), [2]uint32{}); err != nil {
		return err
	}
	n, err := io.Copy(w, f)
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed while being read", e.src)
	}
	return pad(w, n)
}

func writeHeader(w *bufio.Writer, ino uint32, name string, mode, size uint32, rdev [2]uint32) error {
	nlink := uint32(1)
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check.
	_, err := fmt.Fprintf(w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1], len(name)+1, 0)
	if err != nil {
		return err
	}
	if _, err := w.WriteString(name); err != nil {
		return err
	}
	if err := w.WriteByte(0); err != nil {
		return err
	}
	return pad(w, int64(110+len(name)+1))
}

func writePadded(w *bufio.Writer, b []byte) error {
	if _, err := w.Write(b); err != nil {
		return err
	}
	return pad(w, int64(len(b)))
}

// pad writes the zeros that align n written bytes to 4.
func pad(w *bufio.Writer, n int64) error {
	if r := n % 4; r != 0 {
		_, err := w.Write(make([]byte, 4-r))
		return err
	}
	return nil
}
