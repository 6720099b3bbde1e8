package tunnel

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	frames := []struct {
		ch byte
		p  []byte
	}{{ChanStdout, []byte("hello")}, {ChanStatus, nil}, {ChanClose, []byte{ChanStdin}}, {ChanStderr, bytes.Repeat([]byte("x"), 70000)}}
	for _, f := range frames {
		if err := WriteFrame(&buf, f.ch, f.p); err != nil {
			t.Fatal(err)
		}
	}
	var scratch []byte
	for i, f := range frames {
		ch, p, nb, err := ReadFrame(&buf, scratch)
		scratch = nb
		if err != nil || ch != f.ch || !bytes.Equal(p, f.p) {
			t.Fatalf("frame %d = (%d, %d bytes, %v); want (%d, %d bytes)", i, ch, len(p), err, f.ch, len(f.p))
		}
	}
	if _, _, _, err := ReadFrame(&buf, scratch); err != io.EOF {
		t.Fatalf("ReadFrame at the end = %v; want io.EOF", err)
	}
}

func TestFrameErrors(t *testing.T) {
	if err := WriteFrame(io.Discard, 1, make([]byte, MaxFramePayload+1)); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("WriteFrame(too large) = %v; want ErrFrameTooLarge", err)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"short header", []byte{1, 0, 0}, io.ErrUnexpectedEOF},
		{"short payload", []byte{1, 0, 0, 0, 5, 'a'}, io.ErrUnexpectedEOF},
		{"too large", []byte{1, 0xff, 0xff, 0xff, 0xff}, ErrFrameTooLarge},
	} {
		if _, _, _, err := ReadFrame(bytes.NewReader(tc.in), nil); !errors.Is(err, tc.want) {
			t.Errorf("ReadFrame(%s) = %v; want %v", tc.name, err, tc.want)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{255, 0, 0, 0, 1, 0})
	f.Add([]byte{3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		var buf []byte
		for {
			ch, p, nb, err := ReadFrame(r, buf)
			buf = nb
			if err != nil {
				return
			}
			var out bytes.Buffer
			if err := WriteFrame(&out, ch, p); err != nil {
				t.Fatalf("WriteFrame of a frame ReadFrame accepted: %v", err)
			}
		}
	})
}

func TestExecRequestQueryRoundTrip(t *testing.T) {
	in := ExecRequest{Command: []string{"sh", "-c", "echo a&b=c; exit 3"}, Stdin: true, Stdout: true, TTY: true}
	q, err := url.ParseQuery(in.Query())
	if err != nil {
		t.Fatal(err)
	}
	got := ParseExecRequest(q)
	if len(got.Command) != 3 || got.Command[2] != in.Command[2] || !got.Stdin || !got.Stdout || got.Stderr || !got.TTY {
		t.Fatalf("ParseExecRequest(Query(%+v)) = %+v", in, got)
	}
}
