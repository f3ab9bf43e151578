// Package proxy is airouter's OpenAI-compatible front door: it authenticates
// a client, reads its request, resolves the model alias, picks a credential
// by weight (smooth weighted round-robin; weighted random sampling in a
// large pool) among the candidates the current snapshot allows and the
// rate-limit windows admit, and forwards the request through
// one pooled transport. A single failover loop serves every endpoint: a
// retryable outcome moves on to the next untried candidate until one
// succeeds, the hop limit or the time budget is reached, and an exhausted
// request gets an OpenAI error envelope with the per-hop trail. Every
// upstream attempt is reported once as a domain.Outcome; the proxy never
// decides bans itself, it only reads them through Gate.
// It imports only domain, apierror and redact: not projections (the
// snapshot reaches it as a Gate), config, the admin API or NATS; the wiring
// gives it plain values. Its outcomes leave through Deps.Record, which the
// wiring points at transport/eventlog's non-blocking Publish; they come
// back as bans, cooldowns and benches in the snapshot Gate reads. Its time,
// its timers (request_timeout, the time budget) and the model-relearning
// ticker come from an injected clockwork.Clock (Deps.Clock); only the
// deadlines it sets on client connections follow the real clock: write
// deadlines, and the read deadline set to the present moment that ends a
// body read when its request_timeout timer (on the injected clock) fires.
package proxy
