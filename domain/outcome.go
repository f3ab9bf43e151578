package domain

// Class is what happened on one upstream attempt, as the failover loop and
// the ban policy see it.
type Class string

// The outcome classes. A class is derived from the HTTP status and, for a
// 200, from the body; transport failures have a class and no status.
const (
	ClassOK              Class = "ok"
	ClassRateLimited     Class = "rate_limited"     // 429
	ClassAuth            Class = "auth"             // 401, 403
	ClassPayment         Class = "payment"          // 402
	ClassServerError     Class = "server_error"     // 5xx
	ClassTimeout         Class = "timeout"          // no answer within request_timeout
	ClassConnection      Class = "connection"       // refused, reset, DNS, TLS
	ClassEmptyCompletion Class = "empty_completion" // a 200 with no content and no tool calls
	ClassModelNotFound   Class = "model_not_found"  // 404 naming the model
	ClassContentPolicy   Class = "content_policy"   // a refusal that is the request's fault
	ClassClientError     Class = "client_error"     // 400, 404, 413, 422: passed through
	ClassCanceled        Class = "canceled"         // the client went away; never counted
)

// Status codes that stand in for failures that produced no HTTP status, so
// Fail2Ban rules and metrics can name them like any status: a transport
// failure counts as 502, a timeout as 408.
const (
	StatusTransportFailure = 502
	StatusTimeout          = 408
)

// Outcome is the result of one upstream attempt.
type Outcome struct {
	Credential string `json:"credential"`
	// Model is the public model id the client asked for, after alias
	// resolution: the id that routing, bans and benches use.
	Model string `json:"model"`
	// Status is the upstream HTTP status, 0 when no response arrived.
	Status int   `json:"status,omitempty"`
	Class  Class `json:"class"`
	// LatencyMS is the time from sending the request to the response
	// headers (or to the failure).
	LatencyMS int64 `json:"latency_ms"`
	// Attempt is the 1-based hop number within the client request.
	Attempt   int    `json:"attempt"`
	RequestID string `json:"request_id,omitempty"`
	// RetryAfterMS is the upstream's Retry-After, resolved to milliseconds
	// after the event time and capped at MaxRetryAfter; 0 when absent.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	// Proxy marks an outcome from a credential of type proxy, which
	// Fail2Ban never bans (a relay's errors reflect its own pool).
	Proxy bool `json:"proxy,omitempty"`
	// BodyUnsent marks a failure while the upstream was still receiving
	// the request body: the connection was up and the request started,
	// but it failed before the request was fully written (an upstream
	// refusing a body by resetting the connection). Such failures count
	// once per request toward the model bench (see Decide). Absent (false)
	// in events written before it existed.
	BodyUnsent bool `json:"body_unsent,omitempty"`
	// Tokens is what the attempt was charged against tokens-per-minute
	// limits: the usage the upstream reported; 0 when it reported none.
	Tokens int64 `json:"tokens,omitempty"`
	// Replica is the events.replica_id of the router that made the
	// attempt, so every other replica counts it in its rpm/tpm windows
	// (and the one that made it does not count it twice). Absent in
	// events written before it existed.
	Replica string `json:"replica,omitempty"`
}

// Key returns the pair the outcome happened on.
func (o Outcome) Key() Key { return Key{Credential: o.Credential, Model: o.Model} }

// Code is the status Fail2Ban counts: the HTTP status, or 408 for a timeout
// and 502 for any other transport failure. A canceled attempt has no code.
func (o Outcome) Code() int {
	if o.Status > 0 {
		return o.Status
	}
	switch o.Class {
	case ClassTimeout:
		return StatusTimeout
	case ClassConnection, ClassServerError:
		return StatusTransportFailure
	}
	return 0
}

// Success reports whether the attempt produced a usable answer: a 2xx that
// is not an empty completion.
func (o Outcome) Success() bool {
	return o.Status >= 200 && o.Status < 300 && o.Class == ClassOK
}

// Retryable reports whether the failover loop moves on to the next
// candidate after this outcome. Client errors and content-policy refusals are
// the request's fault and go back to the client unchanged; a canceled
// request has no one left to answer.
func (c Class) Retryable() bool {
	switch c {
	case ClassRateLimited, ClassAuth, ClassPayment, ClassServerError,
		ClassTimeout, ClassConnection, ClassEmptyCompletion:
		return true
	}
	return false
}

// CountsForBench reports whether a failure of this class counts toward
// benching the model everywhere: 5xx, timeouts, connection errors and
// "model not found". 401, 403 and 429 belong to a credential.
func (c Class) CountsForBench() bool {
	switch c {
	case ClassServerError, ClassTimeout, ClassConnection, ClassModelNotFound:
		return true
	}
	return false
}

// ClassifyStatus maps an HTTP status to its class. A 200 is ClassOK here;
// the caller that reads the body turns it into ClassEmptyCompletion when the
// completion is empty, and a 400/404 body can make it ClassContentPolicy or
// ClassModelNotFound.
func ClassifyStatus(status int) Class {
	switch {
	case status >= 200 && status < 300:
		return ClassOK
	case status == 429:
		return ClassRateLimited
	case status == 401 || status == 403:
		return ClassAuth
	case status == 402:
		return ClassPayment
	case status == 408:
		return ClassTimeout
	case status >= 500:
		return ClassServerError
	}
	return ClassClientError
}
