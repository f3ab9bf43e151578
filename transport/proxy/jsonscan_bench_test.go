package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// chatBody24K is a chat request of about 2.4 KB: a few messages with
// escapes, numbers, booleans and nested arrays, as clients send them.
func chatBody24K() []byte {
	msg := strings.Repeat(`Summarise the \"report\" below in three lines.\n`, 7)
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o-mini","temperature":0.2,"top_p":1,"max_tokens":512,"stream":false,"messages":[`)
	for i := range 6 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"` + msg + `"}`)
	}
	b.WriteString(`],"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}}}],"stop":null,"n":1,"logit_bias":{"50256":-100}}`)
	return []byte(b.String())
}

// BenchmarkParseBody is the proxy's one pass over a ~2.4 KB request body;
// BenchmarkParseBodyJSONValid is what a second encoding/json pass would add.
func BenchmarkParseBody(b *testing.B) {
	body := chatBody24K()
	if !json.Valid(body) {
		b.Fatalf("the benchmark body is invalid JSON")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseBody(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseBodyJSONValid(b *testing.B) {
	body := chatBody24K()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !json.Valid(body) {
			b.Fatal("invalid")
		}
	}
}
