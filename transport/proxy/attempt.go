package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/airouter/airouter/domain"
)

// attempt sends the request to one candidate. It reports true when the
// client has its answer (or has left) and false when the loop should move
// on.
func (p *Proxy) attempt(w http.ResponseWriter, r *http.Request, rq *request, c *candidate) bool {
	h := hop{cand: c, startMS: p.clock.Now().Sub(rq.start).Milliseconds()}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	timer := p.armAttempt(rq, cancel)

	sent := p.clock.Now()
	var phase bodyPhase
	req := p.upstreamRequest(phase.trace(ctx), r, rq, c)
	if p.tracer != nil {
		req, h.span = p.traceAttempt(req, rq, c, len(rq.hops)+1)
	}
	resp, err := p.transport.RoundTrip(req)
	h.ms = p.clock.Now().Sub(sent).Milliseconds()
	if err != nil {
		stopTimer(timer)
		class, budget := failureClass(r, ctx, err)
		h.class, h.msg, h.bodyUnsent = class, transportMessage(err), phase.unsent()
		return p.fail(rq, h, budget)
	}
	if resp.StatusCode/100 == 2 && isEventStream(resp.Header) {
		// Headers are in: request_timeout is done with; only the budget
		// still bounds the wait for the first event.
		if stopTimer(timer) {
			_ = resp.Body.Close()
			class, budget := failureClass(r, ctx, context.Cause(ctx))
			h.class = class
			return p.fail(rq, h, budget)
		}
		return p.relay(w, r, rq, h, resp, ctx, cancel)
	}

	buf := p.getBuffer()
	defer p.putBuffer(buf)
	readErr := readLimited(buf, resp.Body, p.maxResp)
	_ = resp.Body.Close()
	stopTimer(timer)
	if readErr != nil {
		if errors.Is(readErr, errResponseTooLarge) {
			h.class, h.msg = domain.ClassServerError, "upstream response too large"
			return p.fail(rq, h, false)
		}
		class, budget := failureClass(r, ctx, readErr)
		h.class, h.msg = class, "reading the response: "+transportMessage(readErr)
		return p.fail(rq, h, budget)
	}
	body := buf.Bytes()
	h.status = resp.StatusCode
	h.class = classify(rq.ep, resp.StatusCode, body)
	if resp.StatusCode/100 != 2 {
		h.retryAfter, _ = parseRetryAfter(resp.Header.Get("Retry-After"), p.clock.Now())
	}
	switch {
	case h.class == domain.ClassOK:
		t := bodyUsage(body)
		h.usage = t
		c.charge(p.clock.Now().Unix(), t.tokens())
		p.countTokens(c.cred.name, rq.model, t)
	case h.class == domain.ClassEmptyCompletion:
		h.msg = "a completion with no content and no tool calls"
		return p.fail(rq, h, false)
	case h.class.Retryable() || (failsOverIfWatched(h.class) && rq.conf.watched(c.cred.name, h.status)):
		h.msg = errorMessage(body, rq.conf.secrets)
		return p.fail(rq, h, false)
	}
	// Passed through unchanged but for the configured keys, should an
	// upstream echo one (secrets).
	body = rq.conf.secrets.mask(body)
	rq.hops = append(rq.hops, h)
	p.report(rq, &rq.hops[len(rq.hops)-1], len(rq.hops), false)
	if !p.writeUpstream(w, rq, resp, body) {
		p.metrics.Aborted(c.cred.name, rq.model, rq.ep.String())
	}
	return true
}

// failsOverIfWatched: a client error the credential's Fail2Ban codes watch
// is the credential's failure (a reseller signalling a blocked account with
// 400), so it fails over. A content-policy refusal never does: it is about
// the prompt, not the credential, and failing it over would send a refused
// prompt to every credential, and count it towards every one's ban, only
// to answer 502 instead of the refusal.
func failsOverIfWatched(c domain.Class) bool {
	return c == domain.ClassClientError || c == domain.ClassModelNotFound
}

// upstreamRequest builds the request for one candidate: the client's
// method, path and query on the credential's base URL, the credential's
// key, and the body with the model name the candidate is sent.
func (p *Proxy) upstreamRequest(ctx context.Context, r *http.Request, rq *request, c *candidate) *http.Request {
	send := c.send
	if send == nil {
		send = rq.public
	}
	body := rq.body.raw
	if send != nil {
		body = rq.body.withModel(send)
	}
	u := c.cred.base // a copy
	u.Path += r.URL.Path
	u.RawQuery = r.URL.RawQuery
	// Built as a value: WithContext copies it, so only the copy is
	// allocated.
	req := http.Request{
		Method:        r.Method,
		URL:           &u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        upstreamHeader(r.Header, c.cred, rq.forwardAuth),
		Body:          newBodyReader(body),
		ContentLength: int64(len(body)),
		Host:          u.Host,
	}
	// GetBody lets the transport replay the request on a pooled
	// connection the upstream closed before reading it.
	req.GetBody = func() (io.ReadCloser, error) { return newBodyReader(body), nil }
	return req.WithContext(ctx)
}

// newBodyReader is a request body over bytes the proxy owns. It is a
// NopCloser over a bytes.Reader because net/http recognises that shape as
// a body already in memory: it then buffers the request's headers and the
// body's start together (the transport's 4 KB write buffer), so a request
// that fits leaves in one write and a larger one in the buffer's write
// and one for the rest; with any other reader it flushes the headers in
// a write of their own first.
func newBodyReader(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// writeUpstream answers the client with an upstream response read in full.
// It reports false when the client went away before the body was written.
func (p *Proxy) writeUpstream(w http.ResponseWriter, rq *request, resp *http.Response, body []byte) bool {
	h := w.Header()
	copyResponseHeader(h, resp.Header, rq.conf.secrets)
	setFallbackHeaders(h, rq.hops, rq.settings.ExposeDetailHeaders)
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(resp.StatusCode)
	_, err := w.Write(body)
	return err == nil
}

// isEventStream reports a streamed response by its content type (not by
// the request's "stream" member), so an upstream that streams unasked is
// relayed as a stream.
func isEventStream(h http.Header) bool {
	ct := h.Get("Content-Type")
	return hasPrefixFold(ct, "text/event-stream") || hasPrefixFold(ct, "application/stream+json") ||
		hasPrefixFold(ct, "application/x-ndjson")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

var errResponseTooLarge = errors.New("upstream response too large")

// readLimited reads r to its end into buf, failing past max bytes.
func readLimited(buf *bytes.Buffer, r io.Reader, max int64) error {
	for {
		if int64(buf.Len()) > max {
			return errResponseTooLarge
		}
		buf.Grow(4096)
		b := buf.AvailableBuffer()
		n, err := r.Read(b[:cap(b)])
		buf.Write(b[:n])
		if err == io.EOF {
			if int64(buf.Len()) > max {
				return errResponseTooLarge
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// getBuffer returns a buffer for an upstream body; a body is copied to the
// client before its buffer goes back.
func (p *Proxy) getBuffer() *bytes.Buffer {
	if b, ok := p.bufs.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (p *Proxy) putBuffer(b *bytes.Buffer) {
	if b.Cap() > 1<<20 {
		return // let outsized buffers go
	}
	b.Reset()
	p.bufs.Put(b)
}

// transportMessage is a failed request's error without the request line
// ("Post \"https://...\": "), redacted.
func transportMessage(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return redactMessage(err.Error())
}
