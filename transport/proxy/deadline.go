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
// what the write timeout is for is a client that stops reading. So before
// a write, when less than half the timeout is left, the deadline is pushed
// to a full timeout from now: every write has at least half of it, and a
// quick answer (the common case) touches no deadline at all. A deadline is
// a moment the network stack compares with the real clock, so this reads
// time.Now, not the proxy's clock (Deps.Clock).
type deadlineWriter struct {
	http.ResponseWriter
	d     time.Duration
	armed time.Time // when the current deadline was set
}

// wrap sets dw up over w and returns it renewing the write deadline as it
// writes; with no timeout it returns w. dw is a field of the request's
// inflight, so wrapping allocates nothing. The deadline the server armed
// may pass while the failover loop waits: that is harmless, since nothing
// is written before a renewal, and a deadline moved into the future holds
// again.
func (dw *deadlineWriter) wrap(w http.ResponseWriter, d time.Duration) http.ResponseWriter {
	if d <= 0 {
		return w
	}
	*dw = deadlineWriter{ResponseWriter: w, d: d, armed: time.Now()}
	return dw
}

// renew is called before every write of a stream, so the common case
// reads only the monotonic clock (time.Since), not the wall clock too.
func (w *deadlineWriter) renew() {
	if time.Since(w.armed) < w.d/2 {
		return
	}
	now := time.Now()
	w.armed = now
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(now.Add(w.d))
}

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
