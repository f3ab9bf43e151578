package proxy

import (
	"sync"
	"time"
)

// A request for a model no candidate can take now (every one banned,
// cooling down, benched or over its limits) is answered at once, so a
// client retrying in a loop would write one WARN per request: 7,000 lines
// in 6 s for one benched model. The line is written once per
// unusableWarnEvery per model, saying how many were held back since.
const (
	// unusableWarnEvery is the interval of that line per model, on the
	// proxy's clock: short enough that an operator sees the model is
	// still refused, long enough that a retry loop writes a few lines a
	// minute.
	unusableWarnEvery = 10 * time.Second
	// maxWarnModels bounds the models whose last line is remembered
	// (client-chosen names included); past it, models share one slot.
	maxWarnModels = 1024
)

// warnLimiter decides, per model, whether a repeated WARN is written now.
// The zero value is ready; it is safe for concurrent use.
type warnLimiter struct {
	mu    sync.Mutex
	slots map[string]*warnSlot
}

type warnSlot struct {
	at         time.Time // when the last line was written
	suppressed int       // lines held back since
}

// sharedWarnSlot is the slot of every model past maxWarnModels; a model
// name is never empty.
const sharedWarnSlot = ""

// allow reports whether to write model's line at now and, when it does,
// how many lines were held back since the previous one.
func (l *warnLimiter) allow(model string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slots == nil {
		l.slots = map[string]*warnSlot{}
	}
	s := l.slots[model]
	if s == nil {
		if len(l.slots) >= maxWarnModels {
			l.prune(now)
		}
		if len(l.slots) >= maxWarnModels {
			model = sharedWarnSlot
			s = l.slots[model]
		}
	}
	if s != nil && now.Sub(s.at) < unusableWarnEvery {
		s.suppressed++
		return false, 0
	}
	n := 0
	if s != nil {
		n = s.suppressed
	}
	l.slots[model] = &warnSlot{at: now}
	return true, n
}

// prune forgets the slots whose interval has passed; their held-back
// count is lost with them, as no line is due for them.
func (l *warnLimiter) prune(now time.Time) {
	for m, s := range l.slots {
		if now.Sub(s.at) >= unusableWarnEvery {
			delete(l.slots, m)
		}
	}
}
