package domain

import "strconv"

// Pos is an event's place in the log. Seq is the stream sequence of the
// message that carries the event and Index its place inside that message:
// a message on an outcome subject may carry a batch of outcome events (one
// JSON object a line), every other message carries one event (Index 0).
// Positions order the log: by Seq, then by Index.
type Pos struct {
	Seq   uint64
	Index uint32
}

// Pos returns the event's log position (zero until it was read back).
func (e Event) Pos() Pos { return Pos{Seq: e.Seq, Index: e.Index} }

// Before reports whether p comes earlier in the log than q.
func (p Pos) Before(q Pos) bool {
	return p.Seq < q.Seq || (p.Seq == q.Seq && p.Index < q.Index)
}

// IsZero reports whether p is no position (an event not read back).
func (p Pos) IsZero() bool { return p == Pos{} }

// ResumeSeq is the stream sequence to read on from after the event at p
// was applied: p's own message again, since p may be any event of a batch,
// the first included, and the rest of the batch may not have been applied.
// A fold ignores the events of it that were (Apply skips positions at or
// before the one applied). Zero (no position) reads from the start.
func (p Pos) ResumeSeq() uint64 { return p.Seq }

// String renders p as operators see it: "41" for the only (or first) event
// of message 41, "41.3" for the fourth event of a batch.
func (p Pos) String() string {
	return string(p.AppendTo(nil))
}

// AppendTo appends p as String renders it.
func (p Pos) AppendTo(dst []byte) []byte {
	dst = strconv.AppendUint(dst, p.Seq, 10)
	if p.Index > 0 {
		dst = append(dst, '.')
		dst = strconv.AppendUint(dst, uint64(p.Index), 10)
	}
	return dst
}
