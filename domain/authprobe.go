package domain

// Recovery probes of auth cooldowns: with fail2ban.recovery on, a
// credential cooled as a whole by a 401 (cooldown.auth) gets recovery
// probes like an automatic ban, one request per interval claimed through
// the log (a probe.claimed whose model is "*" and whose ban_id is the
// cooldown's id). A success re-validates the credential: a
// cooldown.lifted event ends its auth cooldown early. A 401 again keeps
// the cooldown to its end.

// KindCooldownLifted: a request sent on a recovery probe of a
// credential's auth cooldown succeeded, so the cooldown (Event.CooldownLift)
// ended early.
const KindCooldownLifted Kind = "cooldown.lifted"

// CooldownLift ends a credential's auth cooldown (Model "*") before its
// Until: By says why (LiftedByRecovery), CooldownID names the cooldown
// (Cooldown.ID).
type CooldownLift struct {
	Credential string   `json:"credential"`
	Model      string   `json:"model"`
	By         LiftedBy `json:"by"`
	CooldownID string   `json:"cooldown_id"`
}

// ID names the cooldown: the id its cooldown.started event was decided
// under, derived from the outcome that caused it, so every replica and
// every replay names it alike.
func (c Cooldown) ID() string {
	return decisionID("cooldown", c.Credential, c.Model, Pos{Seq: c.CauseSeq, Index: c.CauseIndex})
}

// Auth reports whether the cooldown is a credential's auth cooldown: every
// model, for a 401.
func (c Cooldown) Auth() bool { return c.Model == AllModels && c.Status == 401 }

// CooldownLiftID is the id of the event that lifts cooldown cooldownID by
// recovery, so every replica deciding the lift publishes the same id.
func CooldownLiftID(cooldownID string) string { return "recovery/" + cooldownID }
