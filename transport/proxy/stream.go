package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/airouter/airouter/domain"
)

// Stream relay sizes: reads go into a chunkSize buffer; the first data
// event is awaited up to firstEventMax bytes.
const (
	chunkSize     = 32 << 10
	firstEventMax = 16 << 10
)

// relay streams a 2xx event-stream response. Nothing reaches the client
// until the first data event has arrived (for chat and completions: the
// first chunk with content, since leading chunks such as the role-only
// delta carry nothing to show), so a stream that fails before that (no
// bytes, a dropped connection, an in-band error event, the budget, or an
// empty completion: the stream ends before any content) fails over like
// any other attempt and the client never sees it. The time budget stops at
// the upstream's first data event, contentless or not: a reasoning model
// may send its role chunk and then think for minutes, and a stream that
// has started is not cut (the client, as for a non-streamed answer, gets
// its headers with the first content).
// From the first byte on the stream is committed: chunks are relayed and
// flushed as they come, and a failure ends the stream with an SSE error
// event. A read that also ended the stream is written but not flushed: its
// bytes leave with the stream's end (or its error event) in one write.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, rq *request, h hop,
	resp *http.Response, ctx context.Context, cancel context.CancelCauseFunc) bool {
	defer resp.Body.Close()
	bp := p.getChunk()
	defer p.putChunk(bp)
	buf := *bp

	budget := p.armBudget(rq, cancel)
	n, end, err := readFirstEvent(resp.Body, buf, 0, 0)
	if stopTimer(budget) {
		class, budgetOut := failureClass(r, ctx, context.Cause(ctx))
		h.class = class
		return p.fail(rq, h, budgetOut)
	}
	if end >= 0 && rq.ep&(epChat|epCompletions) != 0 {
		n, end, err = readFirstEvent(resp.Body, buf, n, rq.ep)
	}
	if end == endedEmpty || (end < 0 && errors.Is(err, io.EOF) && !hasContentEvent(buf[:n], rq.ep)) {
		h.status, h.class, h.msg = resp.StatusCode, domain.ClassEmptyCompletion, "stream ended before any content"
		return p.fail(rq, h, false)
	}
	if end < 0 {
		if !errors.Is(err, io.EOF) {
			class, budgetOut := failureClass(r, ctx, err)
			h.class, h.msg = class, "stream failed before its first event"
			return p.fail(rq, h, budgetOut)
		}
		end = n // a stream that ended after a partial event: relay it
	}
	if msg, bad := inBandError(buf[:end], rq.conf.secrets); bad {
		h.class, h.msg = domain.ClassServerError, msg
		return p.fail(rq, h, false)
	}

	h.status, h.class = resp.StatusCode, domain.ClassOK
	rq.hops = append(rq.hops, h)
	hp := &rq.hops[len(rq.hops)-1]
	hdr := w.Header()
	copyResponseHeader(hdr, resp.Header, rq.conf.secrets)
	setFallbackHeaders(hdr, rq.hops, rq.settings.ExposeDetailHeaders)
	w.WriteHeader(resp.StatusCode)
	var usage sseUsage
	var tail tailBytes
	err = relayStream(w, rq.conf.secrets, resp.Body, buf, n, err, &usage, &tail)
	p.finishStream(w, r, rq, hp, err, &usage, &tail, cancel)
	return true
}

// relayStream writes the stream on from the n bytes already in buf (read
// with err), chunk by chunk, each flushed unless its read also ended the
// stream, and returns the error that ended it (errClientGone when a write
// failed). It takes the keys and the body as arguments: the loop wakes for
// every chunk with its data out of cache, and each pointer followed to
// reach them would be another miss.
func relayStream(w http.ResponseWriter, sec *secrets, body io.Reader, buf []byte, n int, err error,
	usage *sseUsage, tail *tailBytes) error {
	rc := http.NewResponseController(w)
	chunk := buf[:n]
	for {
		// The configured keys are masked; bytes at the end that may start
		// one wait for the next read (secrets.held).
		keep := 0
		if err == nil {
			keep = sec.held(chunk)
		}
		if out := sec.mask(chunk[:len(chunk)-keep]); len(out) > 0 {
			_, werr := w.Write(out)
			if werr == nil && err == nil {
				if ferr := rc.Flush(); ferr != nil && !errors.Is(ferr, http.ErrNotSupported) {
					werr = ferr
				}
			}
			// Usage and the last bytes are read once the chunk is out:
			// only the stream's end needs them.
			usage.feed(out)
			tail.note(out)
			if werr != nil {
				return errClientGone
			}
		}
		if err != nil {
			return err
		}
		copy(buf, chunk[len(chunk)-keep:])
		var m int
		m, err = body.Read(buf[keep:])
		chunk = buf[:keep+m]
	}
}

// finishStream records how a committed stream ended and, when the upstream
// failed, tells the client with an SSE error event.
func (p *Proxy) finishStream(w http.ResponseWriter, r *http.Request, rq *request, hp *hop, err error,
	usage *sseUsage, tail *tailBytes, cancel context.CancelCauseFunc) {
	switch {
	case errors.Is(err, io.EOF):
		// a clean end
	case errors.Is(err, errClientGone) || r.Context().Err() != nil:
		cancel(errClientGone)
		hp.status, hp.class = 0, domain.ClassCanceled
		p.metrics.Aborted(hp.cand.cred.name, rq.model, rq.ep.String())
	default:
		hp.status, hp.class, hp.msg = 0, domain.ClassConnection, "stream interrupted after its first byte"
		p.log.Warn("upstream stream failed after commit", "request_id", rq.id,
			"credential", hp.cand.cred.name, "model", rq.model)
		_, _ = w.Write(tail.terminator())
		_, _ = w.Write(streamErrorEvent(rq.ep))
		_ = http.NewResponseController(w).Flush()
	}
	hp.cand.charge(p.clock.Now().Unix(), usage.counts.tokens())
	p.countTokens(hp.cand.cred.name, rq.model, usage.counts)
	hp.usage = usage.counts
	p.report(rq, hp, len(rq.hops), false)
}

// endedEmpty is readFirstEvent's end for a stream that finished ([DONE])
// before any content.
const endedEmpty = -2

// readFirstEvent reads on from the n bytes already in buf until it holds a
// complete event with data (comment lines such as keep-alives do not
// count; with ep chat or completions, chunks without content do not
// either), up to firstEventMax bytes. end is where that event ends,
// endedEmpty, or -1.
func readFirstEvent(body io.Reader, buf []byte, n int, ep endpoint) (_, end int, err error) {
	if end = firstDataEventEnd(buf[:n], ep); end >= 0 || end == endedEmpty {
		return n, end, nil
	}
	for {
		var m int
		m, err = body.Read(buf[n:])
		n += m
		if end = firstDataEventEnd(buf[:n], ep); end >= 0 || end == endedEmpty {
			return n, end, nil
		}
		if n >= firstEventMax {
			return n, n, nil
		}
		if err != nil {
			return n, -1, err
		}
	}
}

// firstDataEventEnd returns the end of the first complete event that has a
// non-comment line (for chat and completions, that is not a chunk without
// content), endedEmpty when the stream's [DONE] came first, or -1.
func firstDataEventEnd(b []byte, ep endpoint) int {
	off := 0
	for {
		i, sep := eventBoundary(b[off:])
		if i < 0 {
			return -1
		}
		ev := b[off : off+i]
		if hasDataLine(ev) {
			switch data := eventData(ev); {
			case ep&(epChat|epCompletions) == 0:
				return off + i + sep
			case string(data) == "[DONE]":
				return endedEmpty
			case !contentless(ep, data):
				return off + i + sep
			}
		}
		off += i + sep
	}
}

// hasContentEvent reports whether b, a stream's start that ended without
// a terminator, holds an event worth relaying.
func hasContentEvent(b []byte, ep endpoint) bool {
	if ep&(epChat|epCompletions) == 0 {
		return len(bytes.TrimSpace(b)) > 0
	}
	for len(b) > 0 {
		ev := b
		if i, sep := eventBoundary(b); i >= 0 {
			ev, b = b[:i], b[i+sep:]
		} else {
			b = nil // the last event, cut off
		}
		if hasDataLine(ev) && !contentless(ep, eventData(ev)) && string(eventData(ev)) != "[DONE]" {
			return true
		}
	}
	return false
}

// contentless reports whether a chat or completions chunk shows nothing:
// its choices (present) carry no text, content, tool calls, refusal or
// audio, like the role-only first delta or a bare finish_reason. A chunk
// of another shape counts as content, and so does a reasoning delta
// (reasoning_content or reasoning, as reasoning models stream before
// their answer): holding those back would hold the whole reasoning.
func contentless(ep endpoint, data []byte) bool {
	if len(data) == 0 || data[0] != '{' || !emptyCompletion(ep, data) {
		return false
	}
	reasoning := false
	choices := field(data, "choices")
	elements(choices, func(vs, ve int) bool {
		delta := field(choices[vs:ve], "delta")
		reasoning = nonEmpty(field(delta, "reasoning_content")) || nonEmpty(field(delta, "reasoning"))
		return !reasoning
	})
	return !reasoning
}

// eventData returns the payload of an event's first data line.
func eventData(ev []byte) []byte {
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			return bytes.TrimSpace(d)
		}
	}
	return nil
}

// eventBoundary finds the blank line that ends an event.
func eventBoundary(b []byte) (at, sep int) {
	lf, crlf := bytes.Index(b, []byte("\n\n")), bytes.Index(b, []byte("\r\n\r\n"))
	switch {
	case crlf >= 0 && (lf < 0 || crlf < lf):
		return crlf, 4
	case lf >= 0:
		return lf, 2
	}
	return -1, 0
}

func hasDataLine(ev []byte) bool {
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(line) > 0 && line[0] != ':' {
			return true
		}
	}
	return false
}

// inBandError reports an error event among the first events: an "event:
// error" line, or data whose JSON carries a non-null "error" or a type of
// "error" or "response.failed".
func inBandError(events []byte, s *secrets) (string, bool) {
	for line := range bytes.SplitSeq(events, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if string(line) == "event: error" || string(line) == "event:error" {
			return "error event before the first token", true
		}
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || data[0] != '{' {
			continue
		}
		if e := field(data, "error"); !isNull(e) {
			return errorMessage(data, s), true
		}
		if typ, _ := stringValue(field(data, "type")); typ == "error" || typ == "response.failed" {
			return errorMessage(data, s), true
		}
	}
	return "", false
}

// streamErrorEvent is the SSE event that ends a stream the upstream broke,
// in the surface's own shape.
func streamErrorEvent(ep endpoint) []byte {
	switch ep {
	case epMessages:
		return []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\"," +
			"\"message\":\"upstream stream interrupted\"}}\n\n")
	case epResponses:
		return []byte("event: error\ndata: {\"type\":\"error\",\"code\":\"stream_error\"," +
			"\"message\":\"upstream stream interrupted\",\"param\":null}\n\n")
	}
	return []byte("data: {\"error\":{\"message\":\"upstream stream interrupted\",\"type\":\"stream_error\"," +
		"\"param\":null,\"code\":\"upstream_stream_interrupted\"}}\n\n")
}

// tailBytes remembers the last two bytes relayed, so an error event can
// start on an event boundary.
type tailBytes struct {
	b [2]byte
	n int
}

func (t *tailBytes) note(chunk []byte) {
	for _, c := range chunk[max(0, len(chunk)-2):] {
		t.b[0], t.b[1] = t.b[1], c
		t.n++
	}
}

// terminator closes a partially relayed event.
func (t *tailBytes) terminator() []byte {
	switch {
	case t.n == 0 || (t.b[0] == '\n' && t.b[1] == '\n'):
		return nil
	case t.b[1] == '\n':
		return []byte("\n")
	}
	return []byte("\n\n")
}

func (p *Proxy) getChunk() *[]byte {
	if b, ok := p.chunks.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, chunkSize)
	return &b
}

func (p *Proxy) putChunk(b *[]byte) { p.chunks.Put(b) }
