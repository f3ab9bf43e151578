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
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Attempt(string, string, string, int, time.Duration) {}
func (noMetrics) Request(int)                                        {}
func (noMetrics) Exhausted(int)                                      {}

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
