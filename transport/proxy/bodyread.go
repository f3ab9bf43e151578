package proxy

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Body read errors beyond those of body.go.
var (
	errBodyTimeout = errors.New("Request Timeout: the request body did not arrive within request_timeout")
	errBodyBusy    = errors.New("Service Unavailable: too many large request bodies are being read; retry later")
)

// bodyBusyRetryAfter is the Retry-After, in seconds, of a request that
// found no room in the body budget.
const bodyBusyRetryAfter = "1"

// firstBodyBuf is the buffer a body read starts with (no more than a
// declared length): most requests fit, and net/http already holds a
// buffer of that size for every connection. It doubles as bytes arrive,
// never beyond the declared length, so a client that declares a large
// body and sends part of it holds about twice what it sent, never what it
// declared.
const firstBodyBuf = 4 << 10

// readBody reads the whole client body, refusing more than p.maxBody
// bytes (413 as soon as the limit is passed or declared), within
// request_timeout from the start of the read (errBodyTimeout: 408), and
// within the body budget shared by all requests (errBodyBusy: 503 when no
// room frees up in time). The body is read before anything is forwarded:
// the model field picks the candidates, and failover sends the same bytes
// to each one it tries. It returns the bytes it holds of the budget, which
// the caller releases when the request ends.
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request, watch *bodyWatch) ([]byte, int64, error) {
	if r.ContentLength > p.maxBody {
		return nil, 0, errBodyTooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, 0, nil
	}
	p.watchBody(watch, w)
	rd := bodyRead{budget: p.budget, watch: watch, gone: r.Context().Done()}
	b, err := rd.read(r.Body, r.ContentLength, p.maxBody)
	late := watch.finish()
	switch {
	case errors.Is(err, errBodyTooLarge):
	case late && errors.Is(err, errNoRoom):
		err = errBodyBusy
	case late:
		err = errBodyTimeout
	case errors.Is(err, errNoRoom): // the client went away while waiting
		err = errBodyRead
	}
	if err != nil {
		p.budget.release(rd.held)
		return nil, 0, err
	}
	return b, rd.held, nil
}

// errNoRoom is a wait for the body budget that ended before room freed up.
var errNoRoom = errors.New("no room in the body budget")

// bodyRead is one request's read of its body and what it holds of the
// budget.
type bodyRead struct {
	budget *bodyBudget
	watch  *bodyWatch      // its stop channel closes when request_timeout ran out
	gone   <-chan struct{} // the client went away
	held   int64
}

func (rd *bodyRead) reserve(n int64) error {
	if !rd.budget.acquire(n, rd.watch.stop, rd.gone) {
		return errNoRoom
	}
	rd.held += n
	return nil
}

// read reads body into a buffer that grows with what arrives: a declared
// length is reserved in the budget up front (so that bodies waiting for
// room never each hold part of it and wait for each other) but is never
// allocated before the bytes come; a body of unknown length reserves each
// growth of its buffer.
func (rd *bodyRead) read(body io.Reader, declared, limit int64) ([]byte, error) {
	end := limit + 1 // an unknown length: one byte past the limit means 413
	if declared >= 0 {
		end = declared
		if err := rd.reserve(declared); err != nil {
			return nil, err
		}
	}
	buf := make([]byte, 0, min(end, firstBodyBuf))
	if declared < 0 {
		if err := rd.reserve(int64(cap(buf))); err != nil {
			return nil, err
		}
	}
	for int64(len(buf)) < end {
		if len(buf) == cap(buf) {
			next := min(2*int64(cap(buf)), end)
			if declared < 0 {
				if err := rd.reserve(next - int64(cap(buf))); err != nil {
					return nil, err
				}
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, errBodyRead
		}
	}
	if declared < 0 && int64(len(buf)) > limit {
		return nil, errBodyTooLarge
	}
	return buf, nil
}

// bodyWatch bounds a body read by request_timeout. Its timer is on the
// proxy's clock; when it fires, it ends a wait for the body budget and
// sets the connection's read deadline to a moment already passed, which
// ends a blocked read at once. That deadline is compared by the network
// stack with the real time, so it is the wall clock's time.Now, not the
// proxy's clock. The channel a budget wait selects on is made only when a
// read has to wait: most find room at once.
type bodyWatch struct {
	w       http.ResponseWriter
	timer   clockwork.Timer
	mu      sync.Mutex
	done    bool
	late    bool
	expired chan struct{} // nil until stop or a late expire makes it
}

// watchBody starts bw, a field of the request's inflight, over a read
// answered through w.
func (p *Proxy) watchBody(bw *bodyWatch, w http.ResponseWriter) {
	bw.w = w
	if p.timeout > 0 {
		bw.timer = p.clock.AfterFunc(p.timeout, bw.expire)
	}
}

// stop returns the channel closed when request_timeout runs out (already
// closed if it has).
func (bw *bodyWatch) stop() <-chan struct{} {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if bw.expired == nil {
		bw.expired = make(chan struct{})
		if bw.late {
			close(bw.expired)
		}
	}
	return bw.expired
}

func (bw *bodyWatch) expire() {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if bw.done {
		return
	}
	bw.late = true
	if bw.expired != nil {
		close(bw.expired)
	}
	_ = http.NewResponseController(bw.w).SetReadDeadline(time.Now())
}

// finish stops the watch and reports whether request_timeout ran out
// before the read ended. The connection then has a read deadline in the
// past; the answer (writeBodyError) closes it.
func (bw *bodyWatch) finish() bool {
	if bw.timer != nil {
		bw.timer.Stop()
	}
	bw.mu.Lock()
	defer bw.mu.Unlock()
	bw.done = true
	return bw.late
}

// bodyBudget bounds the request body bytes held at once across requests
// (Deps.BodyBudgetBytes). Waiters are served in arrival order, so a large
// body is not starved by a run of small ones.
type bodyBudget struct {
	mu      sync.Mutex
	size    int64
	used    int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when the room is granted
}

// acquire takes n bytes of room (n <= size), waiting until there is room,
// the channel stop returns is closed or gone is closed; it reports whether
// it got the room. stop is called only when acquire has to wait.
func (b *bodyBudget) acquire(n int64, stop func() <-chan struct{}, gone <-chan struct{}) bool {
	b.mu.Lock()
	if len(b.waiters) == 0 && b.used+n <= b.size {
		b.used += n
		b.mu.Unlock()
		return true
	}
	wt := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, wt)
	b.mu.Unlock()
	select {
	case <-wt.ready:
		return true
	case <-stop():
	case <-gone:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-wt.ready: // granted meanwhile: give it back
		b.used -= n
	default:
		for i, x := range b.waiters {
			if x == wt {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grantLocked()
	return false
}

// release gives back n bytes of room.
func (b *bodyBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked hands room to the waiters at the head of the queue.
func (b *bodyBudget) grantLocked() {
	for len(b.waiters) > 0 && b.used+b.waiters[0].n <= b.size {
		wt := b.waiters[0]
		b.waiters[0] = nil
		b.waiters = b.waiters[1:]
		b.used += wt.n
		close(wt.ready)
	}
}

// inUse is the room held now; tests read it.
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// newBodyBudget sizes the budget: size bytes, 4 × maxBody when 0. One byte
// more than that: a body of unknown length reads one byte past the limit
// to tell that it is too large.
func newBodyBudget(size, maxBody int64) *bodyBudget {
	if size <= 0 {
		size = 4 * maxBody
	}
	return &bodyBudget{size: size + 1}
}

// writeBodyError answers a body that could not be read. The rest of the
// body is not read either: the connection is closed after the answer,
// which net/http would otherwise hold back while it drains a body still
// coming (a 413 while the client sends more).
func writeBodyError(w http.ResponseWriter, ep endpoint, err error) {
	w.Header().Set("Connection", "close")
	status := http.StatusBadRequest
	switch {
	case errors.Is(err, errBodyTooLarge):
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, errBodyTimeout):
		status = http.StatusRequestTimeout
	case errors.Is(err, errBodyBusy):
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", bodyBusyRetryAfter)
	}
	writeError(w, ep, status, err.Error(), "", nil)
}

// waiting is the number of requests waiting for room; tests read it.
func (b *bodyBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}
