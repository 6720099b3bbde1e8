package tunnel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Channels of an exec or attach stream: the numbers of Kubernetes'
// channel protocol, so the server relays WebSocket messages as they are.
const (
	ChanStdin  byte = 0
	ChanStdout byte = 1
	ChanStderr byte = 2
	// ChanStatus carries the final v1 Status as JSON (exit code in its
	// details); the agent sends it last.
	ChanStatus byte = 3
	// ChanResize carries {"Width":w,"Height":h} for a TTY.
	ChanResize byte = 4
	// ChanClose carries one byte, the channel the sender will not write
	// again (stdin EOF).
	ChanClose byte = 255
)

// MaxFramePayload bounds one frame's payload.
const MaxFramePayload = 1 << 20

// ErrFrameTooLarge means a frame announced more than MaxFramePayload.
var ErrFrameTooLarge = errors.New("tunnel: frame too large")

// WriteFrame writes one frame: the channel, the payload's length (4
// bytes, big-endian) and the payload. Callers serialize writers.
func WriteFrame(w io.Writer, ch byte, p []byte) error {
	if len(p) > MaxFramePayload {
		return ErrFrameTooLarge
	}
	var hdr [5]byte
	hdr[0] = ch
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	_, err := w.Write(p)
	return err
}

// ReadFrame reads one frame into buf (grown as needed) and returns its
// channel and payload, which aliases buf. A clean end between frames is
// io.EOF; an end inside one is io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, buf []byte) (byte, []byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, buf, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFramePayload {
		return 0, nil, buf, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	p := buf[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, buf, err
	}
	return hdr[0], p, buf, nil
}
