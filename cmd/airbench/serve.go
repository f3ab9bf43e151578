package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"time"

	"github.com/airouter/airouter/internal/bareproxy"
)

// streamChunks and chunkGap shape the fake upstream's stream: 20 chunks
// 1 ms apart, the first at once, then a usage chunk and [DONE].
const (
	streamChunks = 20
	chunkGap     = time.Millisecond
)

var (
	chatAnswer = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1,"model":"gpt-4o",` +
		`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello"}}],` +
		`"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`)
	// Every chunk carries "usage":null, as OpenAI's do once
	// stream_options.include_usage is set, which airouter asks for on
	// every stream: the bytes a proxy relays, and inspects, are a real
	// stream's.
	streamChunk = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"gpt-4o",` +
		`"choices":[{"index":0,"delta":{"content":"hi "},"finish_reason":null}],"usage":null}` + "\n\n")
	streamEnd = []byte(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"gpt-4o",` +
		`"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":20,"total_tokens":32}}` + "\n\ndata: [DONE]\n\n")
	streamFlag = []byte(`"stream":true`)
)

// upstreamHandler is the fake OpenAI-compatible upstream: a fixed chat
// completion, or, when the request asks for a stream, streamChunks SSE
// chunks chunkGap apart.
func upstreamHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, streamFlag) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(chatAnswer)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		fl, _ := w.(http.Flusher)
		for i := range streamChunks {
			if i > 0 {
				time.Sleep(chunkGap)
			}
			_, _ = w.Write(streamChunk)
			if fl != nil {
				fl.Flush()
			}
		}
		_, _ = w.Write(streamEnd)
	})
}

// bareProxy is the floor (package bareproxy) in front of upstream: the
// ReverseProxy, or with relay the relay.
func bareProxy(upstream string, relay bool) (http.Handler, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("-upstream %q: %w", upstream, err)
	}
	if relay {
		return bareproxy.NewRelay(u), nil
	}
	return bareproxy.New(u), nil
}

// serveRole serves h on 127.0.0.1, prints "ready <url>" on out, and
// serves until in closes (the parent's pipe: the child ends with it).
// With traces it also serves /debug/pprof/trace on a port of its own and
// prints "ready <url> <trace url>".
func serveRole(h http.Handler, traces bool, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	ready := fmt.Sprintf("ready http://%s", ln.Addr())
	if traces {
		tln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = srv.Close()
			return err
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		tsrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = tsrv.Serve(tln) }()
		defer tsrv.Close()
		ready += fmt.Sprintf(" http://%s", tln.Addr())
	}
	fmt.Fprintln(out, ready)
	_, _ = io.Copy(io.Discard, in)
	return srv.Close()
}
