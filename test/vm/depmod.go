package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// depmod writes modules.dep and modules.alias into modDir from the
// .modinfo sections of its modules, as depmod(8) would: Debian's package
// leaves them to its postinst, and build hosts need not have kmod. Each
// modules.dep line lists every module the module needs, transitively, in
// the order depmod uses (the last one is loaded first).
func depmod(modDir string) error {
	type info struct {
		file    string
		depends []string
		aliases []string
	}
	mods := map[string]*info{}
	err := filepath.WalkDir(filepath.Join(modDir, "kernel"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".ko") {
			return err
		}
		deps, aliases, err := modinfo(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, _ := filepath.Rel(modDir, p)
		mods[moduleName(rel)] = &info{file: filepath.ToSlash(rel), depends: deps, aliases: aliases}
		return nil
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(mods))
	for n := range mods {
		names = append(names, n)
	}
	sort.Strings(names)
	var dep, alias bytes.Buffer
	for _, n := range names {
		m := mods[n]
		// Load order, dependencies first, by a depth-first walk.
		var order []string
		seen := map[string]bool{n: true}
		var visit func(string)
		visit = func(name string) {
			d, ok := mods[name]
			if !ok || seen[name] {
				return
			}
			seen[name] = true
			for _, x := range d.depends {
				visit(x)
			}
			order = append(order, d.file)
		}
		for _, x := range m.depends {
			visit(x)
		}
		fmt.Fprintf(&dep, "%s:", m.file)
		for i := len(order) - 1; i >= 0; i-- {
			fmt.Fprintf(&dep, " %s", order[i])
		}
		dep.WriteByte('\n')
		for _, a := range m.aliases {
			fmt.Fprintf(&alias, "alias %s %s\n", a, n)
		}
	}
	if err := os.WriteFile(filepath.Join(modDir, "modules.alias"), alias.Bytes(), 0o644); err != nil {
		return err
	}
	// modules.dep last: its presence marks a finished tree.
	return os.WriteFile(filepath.Join(modDir, "modules.dep"), dep.Bytes(), 0o644)
}

// modinfo reads a module's dependencies and aliases from its .modinfo
// section ("depends=a,b", "alias=fs-overlay", NUL-separated).
func modinfo(path string) (depends, aliases []string, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, nil, nil
	}
	b, err := s.Data()
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok {
			continue
		}
		switch k {
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d != "" {
					depends = append(depends, strings.ReplaceAll(d, "-", "_"))
				}
			}
		case "alias":
			aliases = append(aliases, v)
		}
	}
	return depends, aliases, nil
}
