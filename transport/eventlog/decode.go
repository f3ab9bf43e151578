package eventlog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
)

// decode turns one event's JSON into an event at pos, or into a skip marker
// (empty Kind, position only) that is counted and logged once per kind of
// problem.
func (cs *consumers) decode(dec *eventjson.Decoder, data []byte, pos domain.Pos) domain.Event {
	ev, err := dec.Decode(data)
	if err != nil {
		cs.undecodable.Add(1)
		cs.skipOnce("malformed", pos, err)
		return domain.Event{Seq: pos.Seq, Index: pos.Index}
	}
	if err := ev.Valid(); err != nil {
		cs.skipped.Add(1)
		cs.skipOnce(fmt.Sprintf("%s/v%d", ev.Kind, ev.V), pos, err)
		return domain.Event{Seq: pos.Seq, Index: pos.Index}
	}
	ev.Seq, ev.Index = pos.Seq, pos.Index
	return ev
}

// maxSkipKinds bounds the set of problems already logged, so a stream of
// garbage kinds cannot grow it without limit.
const maxSkipKinds = 64

var errSkipTooMany = errors.New("more kinds of unusable events; no longer logging new ones")

// skipLog is the set of problems already logged.
type skipLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (cs *consumers) skipOnce(kind string, pos domain.Pos, err error) {
	cs.skips.mu.Lock()
	defer cs.skips.mu.Unlock()
	if cs.skips.seen == nil {
		cs.skips.seen = make(map[string]bool)
	}
	if cs.skips.seen[kind] {
		return
	}
	if len(cs.skips.seen) >= maxSkipKinds {
		if !cs.skips.seen[""] {
			cs.skips.seen[""] = true
			cs.log.Warn("skipping event", "error", errSkipTooMany)
		}
		return
	}
	cs.skips.seen[kind] = true
	cs.log.Warn("skipping unusable events of this kind (logged once)", "kind", kind, "first_position", pos.String(), "error", err)
}
