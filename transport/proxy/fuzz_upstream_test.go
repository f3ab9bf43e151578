package proxy

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for what an upstream answers: usage, stream events and
// error bodies (the request side and how to run one are in fuzz_test.go).

// usageSeeds are upstream answers and stream events that report usage.
var usageSeeds = []string{
	chatOK("hi"),
	`{"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`,
	`{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
	`{"usage":{"input_tokens":3,"cache_read_input_tokens":7,"input_tokens_details":[1],"output_tokens_details":"x"}}`,
	`{"type":"message_start","message":{"id":"m","usage":{"input_tokens":25,"output_tokens":1}}}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`,
	`{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":5,"output_tokens":7,"total_tokens":12}}}`,
	`{"object":"list","data":[],"usage":{"prompt_tokens":8,"total_tokens":8}}`,
	`{"usage":{"total_tokens":1.5e3,"prompt_tokens":-4,"completion_tokens":"7"}}`,
	`{"usage":{"total_tokens":123456789012345678901234567890}}`,
	`{"usage":null,"usage":{"tot\u0061l_tokens":9}}`,
	`{"usage":{"total_tokens":3},"usage":{"total_tokens":2}}`,
	`{"usage":{"total_tokens":3`, `{"usage":[1]}`, `[]`, ``,
}

// FuzzUsage: no upstream body makes usage extraction panic; on valid JSON
// the tokens counted are encoding/json's reading of the same numbers
// (duplicates: the largest); and a stream's usage does not depend on how
// its bytes were split between reads.
func FuzzUsage(f *testing.F) {
	for i, s := range usageSeeds {
		f.Add([]byte(s), uint16(i*7))
	}
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		got := bodyTokens(b)
		if json.Valid(b) {
			if want, ok := refTokens(b); ok && got != want {
				t.Errorf("%q: %d tokens, encoding/json reads %d", b, got, want)
			}
		}
		stream := []byte("data: " + string(bytes.ReplaceAll(b, []byte("\n"), nil)) + "\n\ndata: [DONE]\n\n")
		var whole, split sseUsage
		whole.feed(stream)
		at := int(cut) % (len(stream) + 1)
		split.feed(stream[:at])
		split.feed(stream[at:])
		if whole.counts != split.counts {
			t.Errorf("%q: usage %+v whole, %+v split at %d", stream, whole.counts, split.counts, at)
		}
	})
}

// refTokens is bodyTokens by encoding/json. ok is false when a number is
// too large for the comparison to be exact (token counts never are).
func refTokens(b []byte) (_ int64, ok bool) {
	var t struct{ total, in, out int64 }
	ok = true
	add := func(u json.RawMessage) {
		ms, _ := jsonMembers(u)
		for _, m := range ms {
			n, exact := refInt(m.val)
			ok = ok && exact
			switch m.key {
			case "total_tokens":
				t.total = max(t.total, n)
			case "input_tokens", "prompt_tokens":
				t.in = max(t.in, n)
			case "output_tokens", "completion_tokens":
				t.out = max(t.out, n)
			}
		}
	}
	top, _ := jsonMembers(b)
	for _, m := range top {
		switch m.key {
		case "usage":
			add(m.val)
		case "message", "response":
			inner, _ := jsonMembers(m.val)
			for _, im := range inner {
				if im.key == "usage" {
					add(im.val) // the first one
					break
				}
			}
		}
	}
	if t.total > 0 {
		return t.total, ok
	}
	return t.in + t.out, ok
}

// refInt reads a JSON number as the proxy does (a float truncated); any
// other value is 0.
func refInt(v json.RawMessage) (n int64, exact bool) {
	var num json.Number
	if len(v) == 0 || v[0] == '"' || json.Unmarshal(v, &num) != nil {
		return 0, true
	}
	x, err := strconv.ParseFloat(num.String(), 64)
	if err != nil || x > 1e15 || x < -1e15 {
		return 0, false
	}
	return int64(x), true
}

// streamSeeds are the starts of event streams as the surfaces send them.
var streamSeeds = []string{
	sse(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}`) + chunk("hi") + "data: [DONE]\n\n",
	": keep-alive\n\n" + chunk("") + sse(`{"choices":[{"delta":{"reasoning_content":"hm"}}]}`),
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n",
	"event: response.created\r\ndata: {\"type\":\"response.created\"}\r\n\r\n",
	"event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"overloaded sk-test-c1-0123456789abcdef\"}}\n\n",
	sse(`{"type":"response.failed","response":{"error":{"message":"boom"}}}`),
	sse(`{"error":{"message":"key sk-test-c1-0123456789abcdef is bad"}}`),
	sse(`{"choices":[{"delta":{"content":"par`), "data: [DONE]\n\n", "\n\n\n", "",
}

// FuzzStreamStart: no stream start makes the SSE event parsing panic or
// point outside its bytes, for any surface; an in-band error's message
// never carries a configured key.
func FuzzStreamStart(f *testing.F) {
	for i, s := range streamSeeds {
		f.Add(uint8(i), []byte(s))
	}
	sec := newSecrets("sk-test-c1-0123456789abcdef")
	f.Fuzz(func(t *testing.T, e uint8, b []byte) {
		ep := []endpoint{epChat, epCompletions, epResponses, epMessages, epEmbeddings}[int(e)%5]
		end := firstDataEventEnd(b, ep)
		if end < endedEmpty || end > len(b) {
			t.Fatalf("%q: first event ends at %d of %d", b, end, len(b))
		}
		hasContentEvent(b, ep)
		contentless(ep, eventData(b))
		if msg, bad := inBandError(b, sec); bad && strings.Contains(msg, "sk-test-c1-0123456789abcdef") {
			t.Fatalf("%q: in-band error message %q carries the key", b, msg)
		}
		buf := make([]byte, firstEventMax+len(b))
		n, end, _ := readFirstEvent(bytes.NewReader(b), buf, 0, ep)
		if n != len(b) && n < firstEventMax || end < endedEmpty || end > n {
			t.Fatalf("%q: readFirstEvent read %d, end %d", b, n, end)
		}
	})
}

// errorSeeds are upstream error bodies.
var errorSeeds = []string{
	`{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`,
	`{"error":{"message":"The model ` + "`gpt-5`" + ` does not exist","code":"model_not_found"}}`,
	`{"error":{"code":"content_filter","message":"ResponsibleAIPolicyViolation"}}`,
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	`{"error":"invalid key sk-test-c1-0123456789abcdef for user a@b.example"}`,
	`{"message":"Unauthorized","detail":"Bearer sk-test-c1-0123456789abcdef"}`,
	`<html><body>502 Bad Gateway</body></html>`,
	chatEmpty, `{"content":[{"type":"text","text":""}]}`, `{"output":[{"type":"reasoning"}]}`,
	`{"error":{"message":"\ud800"}}`, `{"error":`, ``,
}

// FuzzClassify: no upstream status and body make classification or the
// error message extraction panic; the message never carries a configured
// key and stays bounded.
func FuzzClassify(f *testing.F) {
	statuses := []int{200, 400, 401, 403, 404, 408, 429, 500, 502, 503, 529}
	for i, s := range errorSeeds {
		f.Add(uint8(i), uint16(statuses[i%len(statuses)]), []byte(s))
	}
	sec := newSecrets("sk-test-c1-0123456789abcdef")
	f.Fuzz(func(t *testing.T, e uint8, status uint16, b []byte) {
		ep := []endpoint{epChat, epCompletions, epResponses, epMessages, epEmbeddings}[int(e)%5]
		classify(ep, int(status), b)
		msg := errorMessage(b, sec)
		if strings.Contains(msg, "sk-test-c1-0123456789abcdef") {
			t.Fatalf("%q: message %q carries the key", b, msg)
		}
		if len(msg) > 4*maxMessage+64 {
			t.Fatalf("%q: message of %d bytes", b, len(msg))
		}
	})
}
