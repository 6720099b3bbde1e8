package tunnel

import (
	"io"
	"sync"
)

// closeWriter is a connection that can close its sending half.
type closeWriter interface{ CloseWrite() error }

// Pipe copies a to b and b to a until both directions end. An end of
// stream is passed on as a half-close: CloseWrite where the connection
// has it, else Close (a yamux or SPDY stream's Close ends only its
// sending half). A failed copy closes both. The caller closes a and b
// afterwards.
func Pipe(a, b io.ReadWriteCloser) {
	var wg sync.WaitGroup
	half := func(dst io.ReadWriteCloser, src io.ReadCloser) {
		defer wg.Done()
		buf := make([]byte, pipeBuffer)
		_, err := io.CopyBuffer(dst, src, buf)
		if err != nil {
			_ = dst.Close()
			_ = src.Close()
			return
		}
		if cw, ok := dst.(closeWriter); ok {
			_ = cw.CloseWrite()
			return
		}
		_ = dst.Close()
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
}

// pipeBuffer is each direction's copy buffer: large enough that a bulk
// transfer moves in few frames and system calls.
const pipeBuffer = 128 << 10
