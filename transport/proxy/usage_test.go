package proxy

import (
	"strings"
	"testing"
)

// TestUsageShapes: the one usage parser reads input, output, reasoning and
// cached tokens from every shape the surfaces answer with, whole bodies
// and streams alike (a stream's usage split over several events).
func TestUsageShapes(t *testing.T) {
	cases := []struct {
		name   string
		stream bool
		body   string
		want   tokenCount
	}{
		{"chat", false, `{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,` +
			`"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},` +
			`"completion_tokens_details":{"reasoning_tokens":20,"audio_tokens":0}}}`,
			tokenCount{total: 42, in: 12, out: 30, reasoning: 20, cached: 8}},
		{"responses", false, `{"object":"response","usage":{"input_tokens":7,"output_tokens":9,"total_tokens":16,` +
			`"input_tokens_details":{"cached_tokens":3},"output_tokens_details":{"reasoning_tokens":4}}}`,
			tokenCount{total: 16, in: 7, out: 9, reasoning: 4, cached: 3}},
		{"messages", false, `{"type":"message","content":[{"type":"text","text":"hi"}],` +
			`"usage":{"input_tokens":5,"cache_creation_input_tokens":2,"cache_read_input_tokens":11,"output_tokens":6}}`,
			tokenCount{in: 5, out: 6, cached: 11}},
		{"details null", false, `{"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":null,` +
			`"completion_tokens_details":null}}`, tokenCount{in: 1, out: 2}},
		{"chat stream", true, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":5,\"total_tokens\":9," +
			"\"prompt_tokens_details\":{\"cached_tokens\":2},\"completion_tokens_details\":{\"reasoning_tokens\":1}}}\n\n" +
			"data: [DONE]\n\n", tokenCount{total: 9, in: 4, out: 5, reasoning: 1, cached: 2}},
		{"responses stream", true, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":" +
			"{\"usage\":{\"input_tokens\":3,\"output_tokens\":8,\"total_tokens\":11,\"input_tokens_details\":{\"cached_tokens\":1}," +
			"\"output_tokens_details\":{\"reasoning_tokens\":6}}}}\n\n", tokenCount{total: 11, in: 3, out: 8, reasoning: 6, cached: 1}},
		{"messages stream", true, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":" +
			"{\"input_tokens\":25,\"cache_read_input_tokens\":10,\"output_tokens\":1}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n",
			tokenCount{in: 25, out: 15, cached: 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got tokenCount
			if c.stream {
				var s sseUsage
				for i := 0; i < len(c.body); i += 7 { // cut between reads
					s.feed([]byte(c.body[i:min(i+7, len(c.body))]))
				}
				got = s.counts
			} else {
				got = bodyUsage([]byte(c.body))
			}
			if got != c.want {
				t.Errorf("usage %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestUsageObjectFindsOnlyAnObjectUnderTheKey: a line is parsed for usage
// only when the key "usage" has an object for its value, whitespace
// around the colon allowed; null, other values, the word elsewhere and a
// key with no value yet are not. The chunks every OpenAI stream sends
// with "usage":null count nothing, and the usage chunk still counts,
// whole or cut anywhere between reads.
func TestUsageObjectFindsOnlyAnObjectUnderTheKey(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{`{"usage":{"total_tokens":3}}`, true},
		{`{"usage" :` + "\t" + `{"total_tokens":3}}`, true},
		{`{"message":{"usage":{"input_tokens":2}}}`, true},
		{`{"a":"usage","usage":{}}`, true},
		{`{"xusage":1,"usage":{}}`, true},
		{`{"usage":null}`, false},
		{`{"usage":5,"text":"usage"}`, false},
		{`{"text":"the usage: {}"}`, false},
		{`{"usage":`, false},
		{`usage"usage":{}`, true},
		{``, false},
	} {
		if got := usageObject([]byte(c.line)); got != c.want {
			t.Errorf("usageObject(%s) = %v, want %v", c.line, got, c.want)
		}
	}
	chunk := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":null}` + "\n\n"
	last := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9}}` + "\n\ndata: [DONE]\n\n"
	stream := strings.Repeat(chunk, 3) + last
	for cut := range len(stream) + 1 {
		var s sseUsage
		s.feed([]byte(stream[:cut]))
		s.feed([]byte(stream[cut:]))
		if want := (tokenCount{total: 9, in: 4, out: 5}); s.counts != want {
			t.Fatalf("cut at %d: usage %+v, want %+v", cut, s.counts, want)
		}
	}
}

// BenchmarkSSEUsageNullChunk is a chat chunk with "usage":null, as an
// OpenAI stream sends all but its last once include_usage is on.
func BenchmarkSSEUsageNullChunk(b *testing.B) {
	chunk := []byte(`data: {"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz123","object":"chat.completion.chunk",` +
		`"created":1733580000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_f785eb5f47","choices":` +
		`[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	var s sseUsage
	b.ReportAllocs()
	for b.Loop() {
		s.feed(chunk)
	}
}
