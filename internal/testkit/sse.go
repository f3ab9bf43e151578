package testkit

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// SSEEvent is one Server-Sent Event as a client reads it: its id, event
// name and data, or, for a comment line (": heartbeat"), only Comment.
type SSEEvent struct {
	ID, Event, Data string
	Comment         string
}

// SSE is a Server-Sent Events stream read by a goroutine into Events,
// which is closed when the stream ends.
type SSE struct {
	// Status is the response's status; a stream is read only on 200.
	Status int
	Header http.Header
	Events <-chan SSEEvent
	cancel context.CancelFunc
}

// OpenSSE sends GET url with header and reads the answer as an event
// stream until Close or the end of the test.
func OpenSSE(t testing.TB, url string, header http.Header) *SSE {
	t.Helper()
	ctx, cancel := context.WithCancel(Context(t))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	ch := make(chan SSEEvent, 1024)
	s := &SSE{Status: resp.StatusCode, Header: resp.Header, Events: ch, cancel: cancel}
	t.Cleanup(s.Close)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return
		}
		readSSE(bufio.NewScanner(resp.Body), ch)
	}()
	return s
}

// readSSE splits the stream into events at blank lines.
func readSSE(sc *bufio.Scanner, ch chan<- SSEEvent) {
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var ev SSEEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if ev.Comment != "" || ev.ID != "" || ev.Event != "" || len(data) > 0 {
				ev.Data = strings.Join(data, "\n")
				ch <- ev
			}
			ev, data = SSEEvent{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			ev.Comment = value
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// Next is the next event, comments skipped; it fails the test when none
// comes within Wait or the stream ended.
func (s *SSE) Next(t testing.TB) SSEEvent {
	t.Helper()
	timer := time.NewTimer(Wait)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-s.Events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if ev.Comment == "" {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no event within %s", Wait)
		}
	}
}

// Close ends the stream.
func (s *SSE) Close() { s.cancel() }
