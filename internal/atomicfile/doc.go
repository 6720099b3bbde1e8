// Package atomicfile writes small files so that a crash or power loss
// leaves either the old content or the new, never a part: data goes to a
// synced temporary file beside the target, which is then linked or renamed
// into place and the directory synced. It keeps no state.
package atomicfile
