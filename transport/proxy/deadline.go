package proxy

import (
	"net/http"
	"time"
)

// deadlineWriter moves the server's write timeout from the whole request
// to each write. net/http arms the connection's write deadline when it
// reads a request, so with write_timeout 60 s a stream that runs for two
// minutes, or a failover that waits out several slow upstreams, would be
// cut off. Those waits are bounded by request_timeout and time_budget;
// what the write timeout is for is a client that stops reading, and that
// is caught by renewing the deadline before every write.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

// withWriteDeadlines returns w renewing the write deadline before every
// write; with no timeout it returns w. The deadline the server armed may
// pass while the failover loop waits: that is harmless, since nothing is
// written before the first renewal, and a deadline renewed into the future
// holds again.
func withWriteDeadlines(w http.ResponseWriter, d time.Duration) http.ResponseWriter {
	if d <= 0 {
		return w
	}
	return &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
}

func (w *deadlineWriter) renew() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) WriteHeader(code int) {
	w.renew()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	w.renew()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
