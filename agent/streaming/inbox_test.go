package streaming

import (
	"errors"
	"io"
	"testing"
)

func TestInboxHoldsInputUntilRead(t *testing.T) {
	in := newInbox(8)
	if n, err := in.Write([]byte("hello")); n != 5 || err != nil {
		t.Fatalf("Write = %d, %v; want 5, nil without a reader", n, err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := in.Write([]byte(" wide world")) // 16 bytes > 8: waits for reads
		if err == nil {
			in.CloseWrite(nil)
		}
		wrote <- err
	}()
	got, err := io.ReadAll(in)
	if err != nil || string(got) != "hello wide world" {
		t.Fatalf("ReadAll = %q, %v; want \"hello wide world\"", got, err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("Write past the limit: %v", err)
	}
	if len(in.buf) > in.max {
		t.Errorf("inbox held %d bytes, more than its %d", len(in.buf), in.max)
	}
}

func TestInboxEnds(t *testing.T) {
	in := newInbox(4)
	in.Write([]byte("ab"))
	in.CloseWrite(io.ErrUnexpectedEOF)
	buf := make([]byte, 4)
	if n, err := in.Read(buf); n != 2 || err != nil {
		t.Fatalf("Read after CloseWrite = %d, %v; want the 2 queued bytes", n, err)
	}
	if _, err := in.Read(buf); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Read when drained = %v; want the writer's error", err)
	}
	if _, err := in.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Write after CloseWrite = %v; want ErrClosedPipe", err)
	}

	// The reader going away frees a writer waiting on a full inbox.
	in = newInbox(2)
	done := make(chan error, 1)
	go func() { _, err := in.Write([]byte("more than two")); done <- err }()
	in.Close()
	if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("waiting Write after Close = %v; want ErrClosedPipe", err)
	}
	if _, err := in.Read(buf); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("Read after Close = %v; want ErrClosedPipe", err)
	}
}
