package client

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// chunkReader hands out r's bytes n at a time, so a decoder reads ahead
// of the event it is on.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) {
	return c.r.Read(p[:min(len(p), c.n)])
}

// fill yields n bytes of 'x'.
type fill struct{ n int }

func (f *fill) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

func smallEvents(from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"watch":%d,"resourceVersion":"%d","type":"MODIFIED","object":{"n":%d}}`+"\n", i%3, i, i)
	}
	return b.String()
}

// TestMuxDecoderReadsEveryEventAcrossALargeOne: the events after a large
// one decode whole and in order, though the decoder that read the large
// one had read into them, for every size of read.
func TestMuxDecoderReadsEveryEventAcrossALargeOne(t *testing.T) {
	big := strings.Repeat("y", 3*muxLargeValue)
	stream := smallEvents(0, 5) +
		`{"watch":1,"resume":"since=5","type":"FEED","object":{"peers":"` + big + `"}}` + "\n" +
		smallEvents(6, 40) +
		`{"watch":2,"resourceVersion":"46","type":"ADDED","object":{"big":"` + big + `"}}` +
		smallEvents(47, 3)
	for _, chunk := range []int{1, 13, 4096, 70000, len(stream)} {
		d := newMuxDecoder(chunkReader{strings.NewReader(stream), chunk})
		first := d.d.dec
		for n := 0; n < 50; n++ {
			i, rv, typ, obj, err := d.next()
			if err != nil {
				t.Fatalf("chunk %d: event %d: %v", chunk, n, err)
			}
			switch n {
			case 5:
				if i != 1 || rv != "since=5" || typ != "FEED" || string(obj) != `{"peers":"`+big+`"}` {
					t.Fatalf("chunk %d: the large feed line read as watch %d rv %q type %q, %d bytes", chunk, i, rv, typ, len(obj))
				}
				if d.d.dec == first || d.obj != nil {
					t.Fatalf("chunk %d: the buffers that held the large event are kept", chunk)
				}
			case 46:
				if i != 2 || rv != "46" || typ != "ADDED" || len(obj) != len(big)+10 {
					t.Fatalf("chunk %d: the second large event read as watch %d rv %q type %q, %d bytes", chunk, i, rv, typ, len(obj))
				}
			default:
				want := fmt.Sprintf(`{"n":%d}`, n)
				if i != n%3 || rv != fmt.Sprint(n) || typ != "MODIFIED" || string(obj) != want {
					t.Fatalf("chunk %d: event %d read as watch %d rv %q type %q %s; want %s", chunk, n, i, rv, typ, obj, want)
				}
			}
		}
		if _, _, _, _, err := d.next(); err == nil {
			t.Fatalf("chunk %d: an event past the end", chunk)
		}
	}
}

// TestMuxDecoderLetsGoOfALargeEvent: after a 4 MiB event and small ones,
// the stream's decoder holds a few KiB, not the large event's buffers.
func TestMuxDecoderLetsGoOfALargeEvent(t *testing.T) {
	const size = 4 << 20
	src := io.MultiReader(
		strings.NewReader(`{"watch":0,"resume":"since=1","type":"FEED","object":{"peers":"`),
		&fill{n: size},
		strings.NewReader(`"}}`+"\n"+smallEvents(1, 100)),
	)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	d := newMuxDecoder(src)
	for n := 0; n < 101; n++ {
		if _, _, _, obj, err := d.next(); err != nil {
			t.Fatalf("event %d: %v", n, err)
		} else if n == 0 && !bytes.HasSuffix(obj, []byte(`xx"}`)) {
			t.Fatalf("the large event ends %q", obj[max(0, len(obj)-8):])
		}
	}
	held := int64(heap()) - int64(before)
	runtime.KeepAlive(d)
	if held > size/8 {
		t.Fatalf("the decoder holds %d KiB after a %d KiB event; want it let go", held>>10, size>>10)
	}
}
