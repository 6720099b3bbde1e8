package runtime

import "io"

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width, Height uint16
}

// ExecOptions is one interactive command run in a container (kubectl
// exec): its streams and, with TTY, a terminal whose size follows
// Resize.
type ExecOptions struct {
	Cmd []string
	TTY bool
	// Stdin, when set, is copied to the command's stdin; its EOF closes
	// the command's stdin.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it. With TTY
	// everything goes to Stdout.
	Stdout, Stderr io.Writer
	// Resize delivers terminal sizes (TTY only); nil means none.
	Resize <-chan TermSize
}
