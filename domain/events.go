package domain

import (
	"encoding/json"
	"fmt"
	"time"
)

// SchemaVersion is the version written in every event. A reader skips (and
// counts) events whose version is newer than the one it understands.
const SchemaVersion = 1

// Kind names an event type. Kinds are past-tense facts.
type Kind string

// The event vocabulary.
const (
	// KindOutcomeRecorded: one upstream attempt finished (Event.Outcome).
	KindOutcomeRecorded Kind = "outcome.recorded"
	// KindBanImposed: a pair or a whole credential was taken out of
	// rotation (Event.Ban).
	KindBanImposed Kind = "ban.imposed"
	// KindBanLifted: a ban was lifted by an admin or noticed expired
	// (Event.Unban).
	KindBanLifted Kind = "ban.lifted"
	// KindCooldownStarted: an upstream asked, with Retry-After, not to be
	// called until a moment (Event.Cooldown).
	KindCooldownStarted Kind = "cooldown.started"
	// KindModelBenched: a model failed on several credentials and is
	// skipped everywhere until a moment (Event.Bench).
	KindModelBenched Kind = "model.benched"
	// KindModelUnbenched: an admin lifted a model's bench before its end
	// (Event.Unbench).
	KindModelUnbenched Kind = "model.unbenched"
	// KindFallbackSettingsChanged: an operator changed the failover
	// settings at runtime (Event.Settings).
	KindFallbackSettingsChanged Kind = "settings.fallback_changed"
	// KindBanWithheld: an automatic ban was not imposed because the
	// ejection cap would have been passed (Event.Withheld).
	KindBanWithheld Kind = "ban.withheld"
	// KindBanShadowed: a rule with enforce: false would have banned a
	// pair; nothing was banned (Event.Shadowed).
	KindBanShadowed Kind = "ban.shadowed"
)

// Kinds lists every kind this version understands: the decoder reads a kind
// by it and the fold's tests walk it. Read it, never change it.
var Kinds = []Kind{
	KindOutcomeRecorded, KindBanImposed, KindBanLifted,
	KindCooldownStarted, KindModelBenched, KindFallbackSettingsChanged,
	KindModelUnbenched, KindBanWithheld, KindBanShadowed,
	KindProbeClaimed, KindPolicyChanged, KindCooldownLifted,
	KindReplicaHeartbeat,
}

// Known reports whether this version of airouter understands the kind.
func (k Kind) Known() bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// Event is the envelope of everything written to the log. Exactly one
// payload field matching Kind is set. At is stamped by the producer, in UTC;
// Seq and Index are the log position (Pos), set when the event is read back.
type Event struct {
	// V is the schema version the event was written with (SchemaVersion).
	V    int  `json:"v"`
	Kind Kind `json:"kind"`
	// ID names a decision or an admin change; the log de-duplicates
	// publishes by it (Nats-Msg-Id). Outcomes carry none.
	ID string    `json:"id,omitempty"`
	At time.Time `json:"at"`
	// Seq and Index are the event's log position (see Pos); they are not
	// part of the JSON.
	Seq   uint64 `json:"-"`
	Index uint32 `json:"-"`

	// The payload: the one field that matches Kind.
	Outcome  *Outcome          `json:"outcome,omitempty"`
	Ban      *Ban              `json:"ban,omitempty"`
	Unban    *Unban            `json:"unban,omitempty"`
	Cooldown *Cooldown         `json:"cooldown,omitempty"`
	Bench    *Bench            `json:"bench,omitempty"`
	Unbench  *Unbench          `json:"unbench,omitempty"`
	Settings *FallbackSettings `json:"settings,omitempty"`
	Withheld *Withheld         `json:"withheld,omitempty"`
	// Shadowed is the ban a shadow rule would have imposed.
	Shadowed *Ban `json:"shadowed,omitempty"`
	// Probe is a claimed recovery probe (KindProbeClaimed, recovery.go).
	Probe *ProbeClaim `json:"probe,omitempty"`
	// Heartbeat says a replica is alive (KindReplicaHeartbeat, replica.go).
	Heartbeat *Heartbeat `json:"heartbeat,omitempty"`
	// Policy is an announced ban policy (KindPolicyChanged, policyevent.go).
	Policy *PolicyChange `json:"policy,omitempty"`
	// CooldownLift ends an auth cooldown early (KindCooldownLifted,
	// authprobe.go).
	CooldownLift *CooldownLift `json:"cooldown_lift,omitempty"`
}

// Origin says who imposed a ban.
type Origin string

// Ban origins.
const (
	OriginAdmin    Origin = "admin"
	OriginFail2Ban Origin = "fail2ban"
)

// Ban takes a pair (or, with Model "*", a whole credential) out of rotation
// from Since until Until, or for good when Permanent.
type Ban struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
	Origin     Origin `json:"origin"`
	// Reason is the operator's reason, redacted ("admin: ..."), or the
	// rule that applied ("3 x 429 (rule 429: ...)").
	Reason string `json:"reason,omitempty"`
	// ErrorCode is the status code that crossed the threshold; 0 for an
	// admin ban.
	ErrorCode int        `json:"error_code"`
	Since     time.Time  `json:"since"`
	Permanent bool       `json:"permanent"`
	Until     *time.Time `json:"until,omitempty"`
	// Failures is the pair's count for ErrorCode when the ban was decided
	// (fail2ban only).
	Failures int `json:"failures,omitempty"`
	// Cap is the ejection cap (fail2ban.max_ejection_percent, 1..99) an
	// automatic ban was decided under; the fold does not impose the ban
	// when the model's bans at its arrival leave no room under it
	// (CapWithholds). 0: no cap.
	Cap int `json:"cap,omitempty"`
	// CauseSeq and CauseIndex are the log position of the outcome that
	// triggered an automatic ban, for audit. The ban's id names the pair's
	// failure streak instead, so every re-decision of the same ban shares
	// it.
	CauseSeq   uint64 `json:"cause_seq,omitempty"`
	CauseIndex uint32 `json:"cause_index,omitempty"`
}

// Key returns the key the ban is stored under.
func (b Ban) Key() Key { return Key{Credential: b.Credential, Model: b.Model} }

// ActiveAt reports whether the ban applies at t. A ban stops applying at
// its Until.
func (b Ban) ActiveAt(t time.Time) bool {
	return b.Permanent || b.Until == nil || t.Before(*b.Until)
}

// LiftedBy says why a ban was lifted.
type LiftedBy string

// Reasons a ban is lifted.
const (
	LiftedByAdmin  LiftedBy = "admin"
	LiftedByExpiry LiftedBy = "expiry"
)

// Unban lifts bans. With Model empty it lifts every ban of the credential
// (wildcard and per model); otherwise only the ban on that exact key ("*"
// for the wildcard). An expiry names the ban it lifts (BanID), so a late
// expiry never lifts a newer ban on the same key.
type Unban struct {
	Credential string   `json:"credential"`
	Model      string   `json:"model,omitempty"`
	By         LiftedBy `json:"by"`
	// BanID is the id of the ban an expiry or a recovery lifts; empty for
	// an admin lift.
	BanID string `json:"ban_id,omitempty"`
}

// Cooldown holds a pair (or, with Model "*", every model of the
// credential) back until Until because the upstream said so.
type Cooldown struct {
	Credential string    `json:"credential"`
	Model      string    `json:"model"`
	Until      time.Time `json:"until"`
	// Status is the upstream's answer that caused the cooldown: a 429 or
	// 503 with Retry-After, a 429 of the rate-limit ladder, a 401 (Model
	// "*": the whole credential cools).
	Status int `json:"status"`
	// Reason says why and for how long ("Retry-After 30s", "rate limit,
	// step 3: 4s", "auth: 401"); empty in events written before it.
	Reason string `json:"reason,omitempty"`
	// Step is the rate-limit ladder's step (1 for the first 429 since the
	// pair's last success); 0 for any other cooldown.
	Step int `json:"step,omitempty"`
	// CauseSeq and CauseIndex are the log position of that outcome.
	CauseSeq   uint64 `json:"cause_seq,omitempty"`
	CauseIndex uint32 `json:"cause_index,omitempty"`
	// Since is when the cooldown began (the event's time; the fold fills
	// it in for events written without it). Recovery probes of an auth
	// cooldown are scheduled from it.
	Since time.Time `json:"since,omitzero"`
}

// Key returns the pair that cools down.
func (c Cooldown) Key() Key { return Key{Credential: c.Credential, Model: c.Model} }

// Bench takes a model out of rotation on every credential until Until.
type Bench struct {
	Model string    `json:"model"`
	Until time.Time `json:"until"`
	// Failures and Credentials are the model's failures in the bench
	// window (one request's same failure counted once, see Decide) and
	// the credentials they came from.
	Failures    int      `json:"failures"`
	Credentials []string `json:"credentials"`
	Reason      string   `json:"reason"`
	// CauseSeq and CauseIndex are the log position of the outcome that
	// benched the model.
	CauseSeq   uint64 `json:"cause_seq,omitempty"`
	CauseIndex uint32 `json:"cause_index,omitempty"`
}

// Unbench lifts a model's bench (By is always LiftedByAdmin: a bench that
// ends needs no event, routing compares its Until with the clock). The fold
// also forgets the model's window of failures, so the model is routed again
// at once and only failures after the lift can bench it again.
type Unbench struct {
	Model string   `json:"model"`
	By    LiftedBy `json:"by"`
}

// FallbackSettings are the failover knobs an operator may change at runtime.
type FallbackSettings struct {
	// MaxHops is the most upstream attempts for one client request; 0 or
	// less is no limit (every candidate is tried at most once).
	MaxHops int `json:"max_hops"`
	// TimeBudget bounds a request's attempts up to its first byte to the
	// client; 0 is no budget.
	TimeBudget Duration `json:"time_budget"`
	// ExposeDetailHeaders adds X-Fallback-Detail to answers: each hop's
	// class, status, timing and redacted upstream message.
	ExposeDetailHeaders bool `json:"expose_detail_headers"`
}

// Duration is a time.Duration written as a Go duration string ("45s").
type Duration time.Duration

// MarshalJSON writes the duration as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"45s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Valid reports an error when the payload does not match the kind. Events
// that fail it are skipped and counted like unknown kinds.
func (e Event) Valid() error {
	var ok bool
	switch e.Kind {
	case KindOutcomeRecorded:
		ok = e.Outcome != nil
	case KindBanImposed:
		ok = e.Ban != nil
	case KindBanLifted:
		ok = e.Unban != nil
	case KindCooldownStarted:
		ok = e.Cooldown != nil
	case KindModelBenched:
		ok = e.Bench != nil
	case KindModelUnbenched:
		ok = e.Unbench != nil
	case KindFallbackSettingsChanged:
		ok = e.Settings != nil
	case KindBanWithheld:
		ok = e.Withheld != nil
	case KindBanShadowed:
		ok = e.Shadowed != nil
	case KindProbeClaimed:
		ok = e.Probe != nil
	case KindReplicaHeartbeat:
		ok = e.Heartbeat != nil && e.Heartbeat.Replica != ""
	case KindCooldownLifted:
		ok = e.CooldownLift != nil
	case KindPolicyChanged:
		ok = e.Policy != nil && e.Policy.Fingerprint != ""
	default:
		return fmt.Errorf("unknown event kind %q", e.Kind)
	}
	if !ok {
		return fmt.Errorf("event kind %q without its payload", e.Kind)
	}
	if e.V > SchemaVersion {
		return fmt.Errorf("event schema version %d is newer than %d", e.V, SchemaVersion)
	}
	return nil
}
