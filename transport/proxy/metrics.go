package proxy

import "time"

// Metrics receives what the proxy counts; *adminapi.Metrics satisfies it.
// Every method must be cheap and must not block.
type Metrics interface {
	// Attempt is one upstream attempt: its status (408/502 for transport
	// failures, 0 for a canceled attempt) and its latency.
	Attempt(credential, model, endpoint string, status int, took time.Duration)
	// Request is one client request that reached the failover loop, with
	// the number of upstream attempts it took.
	Request(hops int)
	// Exhausted is a request answered with an exhaustion error.
	Exhausted(status int)
	// Tokens is the usage an answered attempt's response reported
	// (streamed or not): input, output, and the reasoning part of output
	// and the cached part of input.
	Tokens(credential, model string, input, output, reasoning, cached int64)
	// Aborted is an answer the client went away from while it was being
	// written.
	Aborted(credential, model, endpoint string)
	// Panic is a request panic-routed to candidates held back
	// automatically, because none was usable (recovery.go).
	Panic(model string)
	// Probe is a recovery probe this process sent, and whether it
	// succeeded.
	Probe(model string, ok bool)
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Attempt(string, string, string, int, time.Duration) {}
func (noMetrics) Request(int)                                        {}
func (noMetrics) Exhausted(int)                                      {}
func (noMetrics) Tokens(string, string, int64, int64, int64, int64)  {}
func (noMetrics) Aborted(string, string, string)                     {}
func (noMetrics) Panic(string)                                       {}
func (noMetrics) Probe(string, bool)                                 {}

// String names the surface in metrics labels.
func (e endpoint) String() string {
	switch e {
	case epChat:
		return "/v1/chat/completions"
	case epCompletions:
		return "/v1/completions"
	case epEmbeddings:
		return "/v1/embeddings"
	case epResponses:
		return "/v1/responses"
	case epMessages:
		return "/v1/messages"
	}
	return "other"
}
