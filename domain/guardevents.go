package domain

// Withheld records an automatic ban the ejection cap did not impose: the
// rule decided to ban the pair, but banning it would have left more than
// Cap percent of the model's pairs banned (or none of them routable). The
// pair's failures stay counted, so the ban is imposed by the first failure
// after the cap allows it.
type Withheld struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
	// ErrorCode is the status code that crossed the rule's threshold.
	ErrorCode int `json:"error_code"`
	// Rule is the rule that decided, as a ban's reason writes it
	// ("3 x 503 (max_attempts 3, ban permanent)").
	Rule string `json:"rule"`
	// Reason says why the ban was withheld.
	Reason string `json:"reason"`
	// Cap is fail2ban.max_ejection_percent; Banned is how many of the
	// model's Pairs were banned (by any origin) when it was decided.
	Cap    int `json:"cap"`
	Banned int `json:"banned"`
	Pairs  int `json:"pairs"`
	// Failures is the pair's count for ErrorCode.
	Failures int `json:"failures"`
	// StreakSeq and StreakIndex are the position of the first failure of
	// the pair's streak: one streak is withheld once.
	StreakSeq   uint64 `json:"streak_seq"`
	StreakIndex uint32 `json:"streak_index,omitempty"`
	// CauseSeq and CauseIndex are the position of the deciding outcome.
	CauseSeq   uint64 `json:"cause_seq,omitempty"`
	CauseIndex uint32 `json:"cause_index,omitempty"`
}

// Key returns the pair whose ban was withheld.
func (w Withheld) Key() Key { return Key{Credential: w.Credential, Model: w.Model} }

// Streak is the position of the first failure of the withheld streak.
func (w Withheld) Streak() Pos { return Pos{Seq: w.StreakSeq, Index: w.StreakIndex} }
