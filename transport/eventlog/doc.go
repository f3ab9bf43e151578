// Package eventlog is airouter's event log: the one place that talks to NATS
// JetStream. It runs an embedded nats-server (or connects to an external
// cluster), keeps the AIROUTER_EVENTS stream that every outcome, ban, unban,
// cooldown, bench and settings change is written to, and a small
// AIROUTER_CHECKPOINTS stream that carries projection state past the event
// stream's retention. The request path calls Publish, which never blocks;
// admin changes and expiries call PublishControl, which is synchronous,
// retried and deduplicated, and the decision engine PublishDecision, which
// also stores a decision only once per cause; projections read with Consume. Operators' tools read with a
// Reader (OpenReader), which opens the streams that exist, on a NATS URL or
// a private copy of a store directory, and cannot publish.
//
// # Subjects
//
// Other services may subscribe to these (core NATS or JetStream):
//
//	airouter.events.outcome.<credential>.<model>   outcome.recorded
//	airouter.events.outcome.~mixed.~mixed          outcome.recorded, of several pairs
//	airouter.events.ban.<credential>.<model>       ban.imposed
//	airouter.events.unban.<credential>.<model>     ban.lifted
//	airouter.events.cooldown.<credential>.<model>  cooldown.started
//	airouter.events.withheld.<credential>.<model>  ban.withheld
//	airouter.events.shadow.<credential>.<model>    ban.shadowed
//	airouter.events.probe.<credential>.<model>     probe.claimed (model ~2A: an auth cooldown's)
//	airouter.events.uncool.<credential>.~2A        cooldown.lifted
//	airouter.events.bench.<model>                  model.benched, model.unbenched
//	airouter.events.settings.fallback              settings.fallback_changed
//	airouter.events.policy                         policy.changed
//	airouter.events.replica.<replica id>           replica.heartbeat
//	airouter.checkpoints.projections               projection checkpoints
//
// Every <credential> and <model> is one token, escaped reversibly by
// EscapeToken: bytes outside printable ASCII, the space, '.', '*', '>' and
// '~' become "~XX" (upper-case hex of the byte), so "gpt-4.1" is "gpt-4~2E1"
// and "meta-llama/Llama 3" is "meta-llama/Llama~203". The wildcard model "*"
// of a credential-wide ban is therefore the token "~2A"; there is no special
// name for it, so no model name can collide with it. The empty string (an
// unban that lifts every ban of a credential) is the token "~", which no
// other string escapes to. A token is at most MaxTokenLen (96) bytes: an
// escaped name longer than that is shortened to its first bytes (never
// cutting an escape), the marker "~~" and 16 upper-case hex digits of the
// SHA-256 of the whole name, so subjects stay far below the server's
// control-line limit (4 KiB) whatever a credential or model is called.
// UnescapeToken refuses such a token (ErrShortenedToken): the full name is
// only in the event. The payload is the JSON of domain.Event; on an
// outcome subject it may be several, one a line (JSON Lines, see batch.go),
// all of the subject's pair, or on MixedSubject of several pairs (a round
// with many pairs of few outcomes each: "~mixed" is no escaped name). Apart
// from that split, the subject only helps filtering and is never needed to
// decode an event; airouter.events.outcome.> holds every outcome.
//
// # Streams
//
// AIROUTER_EVENTS (airouter.events.>) is bounded by MaxAge and MaxBytes,
// discards the oldest first, and deduplicates Nats-Msg-Id within
// DuplicateWindow (10 s; see its comment). AIROUTER_CHECKPOINTS keeps the
// latest two checkpoints with no age limit. With the embedded server the
// store directory is locked (flock on airouter.lock) and the streams' limits
// follow the options on every Open; on an external cluster an existing
// stream's differing limits are only logged, so airouter versions with
// different configs never flip-flop a shared stream.
//
// # Delivery
//
// Outcomes are batched: the publisher sends the outcome events queued
// together as one message per pair, and the pairs with few of them in a
// round of many such pairs as one message on MixedSubject. Outcomes are at-most-once: Publish drops (and counts) an event when its
// bounded queue is full, and an asynchronous publish error means "unknown",
// never retried, except "no responders" (nobody stored it), which is sent
// again once the stream answers. While NATS is unreachable the publisher
// holds events in its queue rather than in the client, and sends them when
// it is back (see outage.go). The client reconnects forever, to the
// embedded server too; a connection it closes for good is replaced by a new
// one, and the consumers resume on it (see redial.go). Control events are at-least-once:
// PublishControl sets Nats-Msg-Id to the event's ID and retries, and the
// stream's duplicate window (DuplicateWindow) collapses retries and
// identical decisions made by several replicas into one message.
// PublishDecision holds beyond that window: it stores a decision only when
// no event on its subject was stored after the outcome it was decided on,
// and publishes with Nats-Expected-Last-Subject-Sequence so that racing
// copies store one (see control.go).
//
// # Consuming
//
// Consume, Read and Follow call their fn serially and in log order with
// ev.Seq and ev.Index set (domain.Pos: the message's stream sequence and
// the event's line within a batch). An event that cannot be used (malformed
// JSON, an unknown kind, a newer schema version, a payload not matching its
// kind) is counted in Stats, logged once per kind of problem, and reported
// to fn as an event with an empty Kind and only its position set, so the
// caller's "last applied position" still advances past it. Callers must
// ignore such events apart from their position.
package eventlog
