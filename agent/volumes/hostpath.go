package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// hostPath types, as in Kubernetes.
const (
	hostPathUnset             = ""
	hostPathDirectoryOrCreate = "DirectoryOrCreate"
	hostPathDirectory         = "Directory"
	hostPathFileOrCreate      = "FileOrCreate"
	hostPathFile              = "File"
	hostPathSocket            = "Socket"
	hostPathCharDev           = "CharDevice"
	hostPathBlockDev          = "BlockDevice"
)

// checkHostPath applies Kubernetes' hostPath type semantics to path:
// the "...OrCreate" types create a missing directory (0755) or empty file
// (0644, its parent must exist); the others demand that path exists with
// that type; "" checks nothing.
func checkHostPath(path, typ string) error {
	if path == "" || path[0] != '/' {
		return fmt.Errorf("%w: hostPath %q is not absolute", ErrHostPathType, path)
	}
	fi, err := os.Stat(path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return fmt.Errorf("stat hostPath: %w", err)
	}
	want := func(ok bool, what string) error {
		if missing {
			return fmt.Errorf("%w: %s does not exist (want %s)", ErrHostPathType, path, what)
		}
		if !ok {
			return fmt.Errorf("%w: %s is not a %s", ErrHostPathType, path, what)
		}
		return nil
	}
	switch typ {
	case hostPathUnset:
		return nil
	case hostPathDirectoryOrCreate:
		if missing {
			if err := os.MkdirAll(path, 0o755); err != nil {
				return fmt.Errorf("create hostPath directory: %w", err)
			}
			return nil
		}
		return want(fi.IsDir(), "directory")
	case hostPathDirectory:
		return want(!missing && fi.IsDir(), "directory")
	case hostPathFileOrCreate:
		if missing {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("create hostPath file: %w", err)
			}
			return f.Close()
		}
		return want(fi.Mode().IsRegular(), "file")
	case hostPathFile:
		return want(!missing && fi.Mode().IsRegular(), "file")
	case hostPathSocket:
		return want(!missing && fi.Mode()&fs.ModeSocket != 0, "socket")
	case hostPathCharDev:
		return want(!missing && fi.Mode()&fs.ModeCharDevice != 0, "character device")
	case hostPathBlockDev:
		return want(!missing && fi.Mode()&fs.ModeDevice != 0 && fi.Mode()&fs.ModeCharDevice == 0, "block device")
	}
	return fmt.Errorf("%w: unknown hostPath type %q", ErrHostPathType, typ)
}
