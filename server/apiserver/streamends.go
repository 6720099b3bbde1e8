package apiserver

import (
	"errors"
	"time"

	"github.com/skiffhq/skiff/storage"
)

// Why a shared watch stream ended (WatchStreamEnds).
const (
	endClient = iota // the client closed it, or its request ended
	endWrite         // a write failed or its deadline passed: a client that stopped reading
	endDone          // every watch on it ended
	numStreamEnds
)

// StreamEndReasons name why shared streams end, in WatchStreamEnds'
// keys and the metrics' reason label.
var StreamEndReasons = [numStreamEnds]string{"client", "write", "done"}

// Why a watch on a shared stream was ended with an ERROR event
// (WatchStreamEnds).
const (
	watchTooSlow  = iota // it fell behind (storage.ErrTooSlow)
	watchExpired         // its revision was too old (storage.ErrCompacted)
	watchClosed          // the store closed
	watchOtherErr        // anything else
	numWatchErrors
)

// WatchErrorReasons name why watches on shared streams were ended with
// an ERROR, as StreamEndReasons do for the streams.
var WatchErrorReasons = [numWatchErrors]string{"too_slow", "expired", "closed", "other"}

// whyEnded is why st is ending: its write deadline passed (a client
// that did not read, or a stream that could not write for writeTimeout
// plus three heartbeats: HTTP/2 then resets the stream, which also ends
// the request), the client went away, or a write failed.
func (st *watchStream) whyEnded() int {
	if at := st.deadline.at; !at.IsZero() && !time.Now().Before(at) {
		return endWrite
	}
	if st.r.Context().Err() != nil {
		return endClient
	}
	return endWrite
}

// noteEnd counts st's end for reason (once).
func (st *watchStream) noteEnd(reason int) {
	if st.endNoted {
		return
	}
	st.endNoted = true
	st.s.streamEnds[reason].Add(1)
}

// noteWatchError counts an ERROR that ends one of a stream's watches.
func (s *Server) noteWatchError(err error) {
	switch {
	case err == nil:
		return
	case errors.Is(err, storage.ErrTooSlow):
		s.watchErrors[watchTooSlow].Add(1)
	case errors.Is(err, storage.ErrCompacted):
		s.watchErrors[watchExpired].Add(1)
	case errors.Is(err, storage.ErrClosed):
		s.watchErrors[watchClosed].Add(1)
	default:
		s.watchErrors[watchOtherErr].Add(1)
	}
}

// WatchStreamEnds returns, by reason, how many shared watch streams
// ended (client, write, done) and how many of their watches were ended
// with an ERROR (too_slow, expired, closed, other). A fleet whose
// streams end for "write" has agents that stopped reading; a watch
// "too_slow" or "expired" makes its agent open its stream again, and
// its pod watch may list again.
func (s *Server) WatchStreamEnds() (streams, watchErrs map[string]uint64) {
	streams, watchErrs = make(map[string]uint64, numStreamEnds), make(map[string]uint64, numWatchErrors)
	for i, name := range StreamEndReasons {
		streams[name] = s.streamEnds[i].Load()
	}
	for i, name := range WatchErrorReasons {
		watchErrs[name] = s.watchErrors[i].Load()
	}
	return streams, watchErrs
}
