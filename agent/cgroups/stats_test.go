package cgroups

import (
	"path/filepath"
	"testing"
)

func TestV1FakeRootStatsProcessesAndMemoryDir(t *testing.T) {
	mnt := fakeV1(t)
	m, err := NewV1("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "memory/skiff/memory.usage_in_bytes"), "1000\n")
	writeFile(t, filepath.Join(mnt, "memory/skiff/memory.stat"), "cache 500\ntotal_inactive_file 300\n")
	st, err := m.RootStats()
	if err != nil || st.Usage != 1000 || st.WorkingSet != 700 {
		t.Errorf("RootStats() = %+v, %v; want usage 1000, working set 700", st, err)
	}
	writeFile(t, filepath.Join(mnt, "memory/skiff/burstable/poda/memory.usage_in_bytes"), "1\n")
	writeFile(t, filepath.Join(mnt, "pids/skiff/burstable/poda/pids.current"), "17\n")
	if n, err := m.Processes("a"); err != nil || n != 17 {
		t.Errorf("Processes(a) = %d, %v; want 17", n, err)
	}
	if _, err := m.Processes("nope"); err == nil {
		t.Error("Processes(unknown pod) succeeded; want an error")
	}
	if d, err := m.MemoryDir(false); err != nil || d != filepath.Join(mnt, "memory/skiff") {
		t.Errorf("MemoryDir(false) = %q, %v", d, err)
	}
	if d, err := m.MemoryDir(true); err != nil || d != filepath.Join(mnt, "memory") {
		t.Errorf("MemoryDir(true) = %q, %v", d, err)
	}
}

func TestV2FakeProcesses(t *testing.T) {
	mnt := t.TempDir()
	m, err := NewV2("/skiff", mnt)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mnt, "skiff/besteffort/podb/pids.current"), "4\n")
	if n, err := m.Processes("b"); err != nil || n != 4 {
		t.Errorf("Processes(b) = %d, %v; want 4", n, err)
	}
	if d, _ := m.MemoryDir(false); d != filepath.Join(mnt, "skiff") {
		t.Errorf("MemoryDir(false) = %q", d)
	}
}
