package proxy

import (
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// sdkClient is the official SDK pointed at the proxy with the master key.
// Its own retries are off, so any failover seen is the proxy's.
func (f *fixture) sdkClient() *openai.Client {
	c := openai.NewClient(
		option.WithBaseURL(f.srv.URL+"/v1/"),
		option.WithAPIKey(masterKey),
		option.WithMaxRetries(0),
		option.WithHTTPClient(f.srv.Client()),
	)
	return &c
}

const embeddingOK = `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.25,-0.5]}],` +
	`"model":"text-embedding-3-small","usage":{"prompt_tokens":2,"total_tokens":2}}`

func chatParams() openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
}

func TestSDKChatSeesNoFailover(t *testing.T) {
	a := newUpstream(t, step{status: 503, body: `{"error":{"message":"overloaded"}}`})
	b := newUpstream(t)
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	var raw *http.Response
	comp, err := f.sdkClient().Chat.Completions.New(t.Context(), chatParams(), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("SDK chat: %v", err)
	}
	if len(comp.Choices) != 1 || comp.Choices[0].Message.Content != "hello" || comp.Usage.TotalTokens != 30 {
		t.Errorf("completion %+v", comp)
	}
	if raw.Header.Get(hdrAttempts) != "2" {
		t.Errorf("attempts %q: the proxy should have failed over once", raw.Header.Get(hdrAttempts))
	}
}

func TestSDKStreamedChatSeesNoFailover(t *testing.T) {
	a := newUpstream(t, step{events: []string{}, drop: true})
	b := newUpstream(t, step{events: []string{chunk("Hel"), chunk("lo"), usageChunk, "data: [DONE]\n\n"}})
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	stream := f.sdkClient().Chat.Completions.NewStreaming(t.Context(), chatParams())
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SDK stream: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Hello" || acc.Usage.TotalTokens != 9 {
		t.Errorf("accumulated %+v", acc.ChatCompletion)
	}
	if a.count() != 1 || b.count() != 1 {
		t.Errorf("calls a=%d b=%d", a.count(), b.count())
	}
}

func TestSDKEmbeddingsSeeNoFailover(t *testing.T) {
	a := newUpstream(t, step{status: 429, body: `{"error":{"message":"rate limited"}}`})
	b := newUpstream(t, step{status: 200, body: embeddingOK})
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("text-embedding-3-small", "a", "b"), nil)
	emb, err := f.sdkClient().Embeddings.New(t.Context(), openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hi")},
	})
	if err != nil {
		t.Fatalf("SDK embeddings: %v", err)
	}
	if len(emb.Data) != 1 || len(emb.Data[0].Embedding) != 2 || emb.Data[0].Embedding[1] != -0.5 {
		t.Errorf("embeddings %+v", emb)
	}
	if a.count() != 1 || b.count() != 1 {
		t.Errorf("calls a=%d b=%d", a.count(), b.count())
	}
}

func TestSDKSeesExhaustionAndBrokenStreams(t *testing.T) {
	a := newUpstream(t, step{status: 503, body: `{}`})
	b := newUpstream(t, step{status: 500, body: `{}`})
	f := newFixture(t, []Credential{cred("a", a), cred("b", b)}, routesFor("gpt-4o", "a", "b"), nil)
	_, err := f.sdkClient().Chat.Completions.New(t.Context(), chatParams())
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Type != "api_error" {
		t.Fatalf("exhaustion through the SDK: %v", err)
	}

	c := newUpstream(t, step{events: []string{chunk("one")}, drop: true})
	f2 := newFixture(t, []Credential{cred("c", c)}, routesFor("gpt-4o", "c"), nil)
	stream := f2.sdkClient().Chat.Completions.NewStreaming(t.Context(), chatParams())
	defer stream.Close()
	n := 0
	for stream.Next() {
		n++
	}
	if n != 1 || stream.Err() == nil {
		t.Errorf("a stream broken after one chunk: %d chunks, err %v; want 1 and an error", n, stream.Err())
	}
}
