package client

import (
	"fmt"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// muxLargeValue is the event size past which a stream's decoding buffers
// are let go once the event is handed out. Both the decoder's buffer and
// the object buffer grow to the largest event read and would keep that
// size for the stream's life. A pod's event is a few KiB; what is larger
// comes seldom: a peer feed's whole set (1.3 MB for 10,000 peers) at the
// start of a stream that lives for hours, a batch of the peers that
// joined in one second (13 KB for 100).
const muxLargeValue = 8 << 10

// muxDecoder reads a shared stream's events (readMuxEvent), keeping its
// buffers small after a large one.
type muxDecoder struct {
	d   streamDecoder
	obj []byte
}

func newMuxDecoder(r io.Reader) *muxDecoder {
	return &muxDecoder{d: newStreamDecoder(r)}
}

// next reads the next event. Its object is valid until the next call.
func (m *muxDecoder) next() (i int, rv, typ string, obj []byte, err error) {
	i, rv, typ, obj, err = readMuxEvent(m.d.dec, m.obj[:0])
	m.obj = obj
	if err != nil || cap(obj) <= muxLargeValue {
		return i, rv, typ, obj, err
	}
	// The caller has obj until the next call; this decoder starts afresh.
	m.obj = nil
	m.d.renew()
	return i, rv, typ, obj, nil
}

// streamDecoder is a decoder of a stream of top-level JSON values that
// can start afresh between two of them (renew).
type streamDecoder struct {
	src *aheadReader // what dec reads from
	dec *jsontext.Decoder
}

func newStreamDecoder(r io.Reader) streamDecoder {
	src := &aheadReader{r: r}
	return streamDecoder{src: src, dec: jsontext.NewDecoder(src, watchJSON...)}
}

// renew replaces the decoder, whose buffer held a large value whole and
// would keep that size, by a new one that starts with a small buffer and
// first reads the bytes the old one had read ahead. It is called between
// two values.
func (s *streamDecoder) renew() {
	ahead := s.dec.UnreadBuffer()
	s.src = &aheadReader{ahead: append(append([]byte(nil), ahead...), s.src.ahead...), r: s.src.r}
	s.dec = jsontext.NewDecoder(s.src, watchJSON...)
}

// aheadReader reads ahead, then r.
type aheadReader struct {
	ahead []byte
	r     io.Reader
}

func (a *aheadReader) Read(p []byte) (int, error) {
	if len(a.ahead) > 0 {
		n := copy(p, a.ahead)
		a.ahead = a.ahead[n:]
		if len(a.ahead) == 0 {
			a.ahead = nil
		}
		return n, nil
	}
	return a.r.Read(p)
}

// readMuxEvent reads one {"watch":i,"resourceVersion":…,"type":…,
// "object":…} line, appending the object to obj; a feed's line has
// "resume" instead of "resourceVersion", returned as rv.
func readMuxEvent(d *jsontext.Decoder, obj []byte) (i int, rv, typ string, _ []byte, err error) {
	tok, err := d.ReadToken()
	if err != nil {
		return 0, "", "", obj, err
	}
	if tok.Kind() != '{' {
		return 0, "", "", obj, fmt.Errorf("event at offset %d is not an object", d.InputOffset())
	}
	i = -1
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return 0, "", "", obj, err
		}
		name := tok.String() // the token is void after the next read
		switch name {
		case "watch":
			v, err := d.ReadToken()
			if err != nil {
				return 0, "", "", obj, err
			}
			if v.Kind() != '0' {
				return 0, "", "", obj, fmt.Errorf("event at offset %d: watch is not an index", d.InputOffset())
			}
			n, perr := strconv.ParseUint(v.String(), 10, 8)
			if perr != nil {
				return 0, "", "", obj, fmt.Errorf("event at offset %d: watch is not an index", d.InputOffset())
			}
			i = int(n)
		case "resourceVersion", "resume", "type":
			v, err := d.ReadToken()
			if err != nil {
				return 0, "", "", obj, err
			}
			if v.Kind() != '"' {
				return 0, "", "", obj, fmt.Errorf("event at offset %d: %s is not a string", d.InputOffset(), name)
			}
			if name == "type" {
				typ = v.String()
			} else {
				rv = v.String()
			}
		case "object":
			v, err := d.ReadValue()
			if err != nil {
				return 0, "", "", obj, err
			}
			obj = append(obj, v...)
		default:
			if err := d.SkipValue(); err != nil {
				return 0, "", "", obj, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return 0, "", "", obj, err
	}
	return i, rv, typ, obj, nil
}
