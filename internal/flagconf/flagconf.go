package flagconf

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Sources says where a command's settings come from besides its flags.
type Sources struct {
	// Getenv looks up environment variables; nil means no environment.
	Getenv func(string) string
	// ConfigFile is the main config file. When Explicit is false a missing
	// file is not an error (the default path need not exist).
	ConfigFile string
	Explicit   bool
	// OtherKeys are keys that other skiff commands reading the same files
	// know (the agent's --server in a file `skiff server` also reads). A
	// file may hold them; this command ignores them. Any other key that
	// is not one of this command's flags is an error.
	OtherKeys []string
}

// EnvName returns the environment variable for a flag: "node-name" →
// "SKIFF_NODE_NAME".
func EnvName(flagName string) string {
	return "SKIFF_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Names returns the names of fs's flags, for another command's
// Sources.OtherKeys.
func Names(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// Parse parses args into fs and then fills every flag not given on the
// command line from the environment, then from the config file and the
// YAML files of the directory "<file>.d" in name order (later files win).
// An unknown key in a file, or a value a flag rejects, is an error naming
// the key and its source; fs is then only partly filled and must not be used.
func Parse(fs *flag.FlagSet, args []string, src Sources) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	fileVals, err := readFiles(fs, src)
	if err != nil {
		return err
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if src.Getenv != nil {
			if v := src.Getenv(EnvName(f.Name)); v != "" {
				if err := fs.Set(f.Name, v); err != nil {
					errs = append(errs, fmt.Errorf("environment variable %s: %w", EnvName(f.Name), err))
				}
				return
			}
		}
		if fv, ok := fileVals[f.Name]; ok {
			if err := fs.Set(f.Name, fv.value); err != nil {
				errs = append(errs, fmt.Errorf("%s: key %q: %w", fv.file, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

type fileValue struct {
	value string
	file  string
}

func readFiles(set *flag.FlagSet, src Sources) (map[string]fileValue, error) {
	out := map[string]fileValue{}
	if src.ConfigFile == "" {
		return out, nil
	}
	files := []string{src.ConfigFile}
	if _, err := os.Stat(src.ConfigFile); err != nil {
		if !errors.Is(err, fs.ErrNotExist) || src.Explicit {
			return nil, fmt.Errorf("config file: %w", err)
		}
		files = nil
	}
	extra, err := filepath.Glob(filepath.Join(src.ConfigFile+".d", "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("config dir: %w", err)
	}
	sort.Strings(extra)
	files = append(files, extra...)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read config file: %w", err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if set.Lookup(k) == nil {
				if slices.Contains(src.OtherKeys, k) {
					continue
				}
				return nil, fmt.Errorf("%s: unknown key %q", name, k)
			}
			s, err := scalar(m[k])
			if err != nil {
				return nil, fmt.Errorf("%s: key %q: %w", name, k, err)
			}
			out[k] = fileValue{value: s, file: name}
		}
	}
	return out, nil
}

// scalar renders a YAML value as flag text; lists become comma-separated
// and maps k=v pairs, matching the flags that take "a=b,c=d".
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			s, err := scalar(x[k])
			if err != nil {
				return "", err
			}
			parts[i] = k + "=" + s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("unsupported value %v", v)
}
