package eventlog

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/hashicorp/go-hclog"
)

// collectBatch runs items through a batch and returns what it sent.
func collectBatch(items ...*pubItem) []pubItem {
	var sent []pubItem
	b := batch{send: func(it pubItem) { sent = append(sent, it) }}
	for _, it := range items {
		b.add(it)
	}
	b.flush()
	return sent
}

func item(subject, data string) *pubItem {
	return &pubItem{subject: subject, data: []byte(data), events: 1}
}

func TestBatchGroupsEventsPerSubjectInOrder(t *testing.T) {
	a, b := outcomePrefix+"a.m", outcomePrefix+"b.m"
	sent := collectBatch(item(a, `{"n":1}`), item(b, `{"n":2}`), item(a, `{"n":3}`), item(a, `{"n":4}`))
	want := []struct {
		subject, data string
		events        int
	}{{a, "{\"n\":1}\n{\"n\":3}\n{\"n\":4}", 3}, {b, `{"n":2}`, 1}}
	if len(sent) != len(want) {
		t.Fatalf("sent %d messages, want %d: %+v", len(sent), len(want), sent)
	}
	for i, w := range want {
		if sent[i].subject != w.subject || string(sent[i].data) != w.data || sent[i].events != w.events {
			t.Errorf("message %d = %s %q (%d events), want %s %q (%d)", i, sent[i].subject, sent[i].data, sent[i].events, w.subject, w.data, w.events)
		}
		if got := eventsIn(sent[i].subject, sent[i].data); got != w.events {
			t.Errorf("eventsIn(message %d) = %d, want %d", i, got, w.events)
		}
	}
	// A second round starts from nothing, with a buffer of its own.
	again := collectBatch(item(a, `{"n":5}`), item(a, `{"n":6}`))
	if len(again) != 1 || string(again[0].data) != "{\"n\":5}\n{\"n\":6}" || string(sent[0].data) != want[0].data {
		t.Fatalf("second round %q; first round's batch now %q", again[0].data, sent[0].data)
	}
}

func TestBatchStaysWithinItsBounds(t *testing.T) {
	a := outcomePrefix + "a.m"
	big := `{"pad":"` + strings.Repeat("x", maxBatchBytes/3) + `"}`
	sent := collectBatch(item(a, big), item(a, big), item(a, big), item(a, big))
	if len(sent) != 2 || sent[0].events != 2 || sent[1].events != 2 {
		t.Fatalf("4 events of a third of the bound went out as %d messages", len(sent))
	}
	for _, m := range sent {
		if len(m.data) > maxBatchBytes {
			t.Fatalf("a batch of %d bytes passed the bound %d", len(m.data), maxBatchBytes)
		}
	}

	// A server with a smaller max_payload gets smaller batches.
	small := batch{send: func(it pubItem) { sent = append(sent, it) }, maxBytes: batchLimit(4 << 10)}
	sent = nil
	for range 20 {
		small.add(item(a, `{"pad":"`+strings.Repeat("y", 400)+`"}`))
	}
	small.flush()
	for _, m := range sent {
		if len(m.data) > 3<<10 {
			t.Fatalf("a batch of %d bytes for a server taking 4 KiB", len(m.data))
		}
	}
	if len(sent) < 3 || batchLimit(4<<20) != maxBatchBytes {
		t.Fatalf("20 events of 410 bytes went out as %d messages under a 3 KiB bound", len(sent))
	}

	var items []*pubItem
	for i := range maxBatchPairs + 1 {
		items = append(items, item(fmt.Sprintf("%sc%d.m", outcomePrefix, i), fmt.Sprintf(`{"n":%d}`, i)))
	}
	items = append(items, item(outcomePrefix+"c0.m", `{"n":"again"}`))
	sent = collectBatch(items...)
	// The pair past the bound sends the first maxBatchPairs (one event
	// each: mixed, in one message); c0 then starts a new batch behind the
	// new pair, and the two, fewer than mixPairs, go on their own subjects.
	if len(sent) != 3 || sent[0].subject != MixedSubject || sent[0].events != maxBatchPairs ||
		sent[1].subject != fmt.Sprintf("%sc%d.m", outcomePrefix, maxBatchPairs) ||
		sent[2].subject != outcomePrefix+"c0.m" || sent[2].events != 1 {
		t.Fatalf("sent %d messages: %s (%d events), then %s and %s", len(sent), sent[0].subject, sent[0].events,
			sent[len(sent)-2].subject, sent[len(sent)-1].subject)
	}
}

func TestOnlyOutcomeSubjectsCarryBatches(t *testing.T) {
	for subject, want := range map[string]bool{
		Subject(outcomeEvent(1)):                       true,
		Subject(banEvent("x", "a", "gpt")):             false,
		subjectPrefix + "settings.fallback":            false,
		subjectPrefix + "outcomes.x":                   false,
		"other.events.outcome.a.b":                     false,
		pairSubject("cooldown.", "outcome", "outcome"): false,
	} {
		if batchable(subject) != want {
			t.Errorf("batchable(%q) = %v, want %v", subject, !want, want)
		}
	}
}

// A batch message is read back as its events, numbered by Index, with
// pending counting down to 0 at the last one; a line that is not an event
// is a skip marker at its own position. Messages on other subjects are one
// event however many lines their JSON takes.
func TestConsumeSplitsOutcomeBatches(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	line := func(i int) []byte {
		b, err := eventjson.Encode(outcomeEvent(i))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	batchData := bytes.Join([][]byte{line(0), line(16), []byte(`{"v":1,"kind":`), line(32), nil}, []byte("\n"))
	if _, err := l.conn.cur().js.Publish(ctx, Subject(outcomeEvent(0)), batchData); err != nil {
		t.Fatal(err)
	}
	pretty := []byte("{\n  \"v\": 1,\n  \"kind\": \"ban.imposed\",\n  \"id\": \"manual-1\",\n  \"at\": \"2026-11-29T12:00:00Z\",\n" +
		"  \"ban\": {\"credential\": \"a\", \"model\": \"gpt\", \"origin\": \"admin\", \"error_code\": 0,\n" +
		"    \"since\": \"2026-11-29T12:00:00Z\", \"permanent\": true}\n}\n")
	if _, err := l.conn.cur().js.Publish(ctx, pairSubject("ban.", "a", "gpt"), pretty); err != nil {
		t.Fatal(err)
	}
	// A message with no event in it still takes a position.
	if _, err := l.conn.cur().js.Publish(ctx, Subject(outcomeEvent(1)), []byte("\n \n")); err != nil {
		t.Fatal(err)
	}

	type delivery struct {
		pos     domain.Pos
		kind    domain.Kind
		req     string
		pending uint64
	}
	var got []delivery
	err := l.Read(ctx, 0, 0, func(ev domain.Event, pending uint64) error {
		d := delivery{pos: ev.Pos(), kind: ev.Kind, pending: pending}
		if ev.Outcome != nil {
			d.req = ev.Outcome.RequestID
		}
		got = append(got, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []delivery{
		{domain.Pos{Seq: 1, Index: 0}, domain.KindOutcomeRecorded, "req-00000000", 5},
		{domain.Pos{Seq: 1, Index: 1}, domain.KindOutcomeRecorded, "req-00000016", 4},
		{domain.Pos{Seq: 1, Index: 2}, "", "", 3},
		{domain.Pos{Seq: 1, Index: 3}, domain.KindOutcomeRecorded, "req-00000032", 2},
		{domain.Pos{Seq: 2}, domain.KindBanImposed, "", 1},
		{domain.Pos{Seq: 3}, "", "", 0},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("delivered\n%v\nwant\n%v", got, want)
	}
	if s := l.Stats(); s.Undecodable != 2 {
		t.Fatalf("undecodable = %d, want the broken line and the empty message", s.Undecodable)
	}

	// A reader whose state ends inside the batch resumes at its message
	// (domain.Pos.ResumeSeq) and gets the whole batch again.
	resumed := make(chan domain.Pos, 8)
	stop, err := l.Consume(ctx, domain.Pos{Seq: 1, Index: 1}.ResumeSeq(), func(ev domain.Event, _ uint64) { resumed <- ev.Pos() })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if p := <-resumed; p != want[i].pos {
			t.Fatalf("resumed delivery %d at %v, want %v", i, p, want[i].pos)
		}
	}
	stop()

	// Reading up to the batch's message gives all of its events and
	// nothing after.
	n := 0
	if err := l.Read(ctx, 1, 1, func(ev domain.Event, _ uint64) error {
		if ev.Seq != 1 {
			t.Errorf("Read(1, 1) delivered %v", ev.Pos())
		}
		n++
		return nil
	}); err != nil || n != 4 {
		t.Fatalf("Read(1, 1) delivered %d events, %v; want the batch's 4", n, err)
	}
}

// batchOf is a batch message of outcomeEvent(from) to outcomeEvent(to-1).
func batchOf(t *testing.T, from, to int) []byte {
	t.Helper()
	var lines [][]byte
	for i := from; i < to; i++ {
		b, err := eventjson.Encode(outcomeEvent(i))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	return bytes.Join(lines, []byte("\n"))
}

func TestDeliverPausesBetweenRunsOnlyAtTheHead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		events  int
		pending uint64
		atHead  bool
		pauses  []int // events delivered before each pause
	}{
		{"at the head", 100, 0, true, []int{32, 64, 96}},
		{"one run", foldRun, 0, true, nil},
		{"a run and one", foldRun + 1, 0, true, []int{32}},
		{"not at the head", 100, 0, false, nil},
		{"behind", 100, 3, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := &consumers{log: hclog.NewNullLogger()}
			var pauses []int
			n := 0
			cs.pause = func() { pauses = append(pauses, n) }
			var dec eventjson.Decoder
			cs.deliver(&dec, Subject(outcomeEvent(0)), batchOf(t, 0, tc.events), 7, tc.pending, tc.atHead,
				func() bool { return false }, func(ev domain.Event, pending uint64) {
					if want := fmt.Sprintf("req-%08d", n); ev.Outcome == nil || ev.Outcome.RequestID != want {
						t.Fatalf("event %d is %+v, want %s", n, ev, want)
					}
					if want := tc.pending + uint64(tc.events-n-1); pending != want {
						t.Fatalf("event %d pending %d, want %d", n, pending, want)
					}
					n++
				})
			if n != tc.events {
				t.Fatalf("delivered %d events, want %d", n, tc.events)
			}
			if fmt.Sprint(pauses) != fmt.Sprint(tc.pauses) {
				t.Fatalf("paused after %v events, want %v", pauses, tc.pauses)
			}
		})
	}

	// A stop during a pause ends the delivery there.
	cs := &consumers{log: hclog.NewNullLogger()}
	stopped := false
	cs.pause = func() { stopped = true }
	var dec eventjson.Decoder
	n := 0
	cs.deliver(&dec, Subject(outcomeEvent(0)), batchOf(t, 0, 100), 7, 0, true,
		func() bool { return stopped }, func(domain.Event, uint64) { n++ })
	if n != foldRun {
		t.Fatalf("stopped in the first pause, yet %d events were delivered", n)
	}
}

func TestFoldsAtHead(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name    string
		pending uint64
		stored  time.Time
		want    bool
	}{
		{"stored just now, nothing after it", 0, now.Add(-time.Millisecond), true},
		{"a burst in the client's read-ahead", 0, now.Add(-50 * time.Millisecond), false},
		{"stored headLag ago", 0, now.Add(-headLag), false},
		{"messages after it", 3, now, false},
	} {
		if got := foldsAtHead(tc.pending, tc.stored, now); got != tc.want {
			t.Errorf("%s: foldsAtHead = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLiveBatchesFoldInRuns: through the embedded log, the fold (Consume)
// pauses in a batch that reaches it at the head, not in messages stored
// long before it got them (pending 0 or not); Follow and Read never pause.
func TestLiveBatchesFoldInRuns(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	ctx := testkit.Context(t)
	publish := func(from, to int) {
		if _, err := l.conn.cur().js.Publish(ctx, Subject(outcomeEvent(0)), batchOf(t, from, to)); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(ch <-chan struct{}, what string) {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		}
	}
	publish(0, 100)
	publish(100, 200)

	// The store times of the first two messages are an hour old by the
	// clock the consumers read, so the fold is behind for both, even for
	// the second, which the server sends with nothing after it.
	var lag atomic.Int64
	lag.Store(int64(time.Hour))
	l.cons.now = func() time.Time { return time.Now().Add(time.Duration(lag.Load())) }
	var mu sync.Mutex
	var pauses []int
	n := 0
	done := make(chan struct{}, 2)
	l.cons.pause = func() {
		mu.Lock()
		defer mu.Unlock()
		pauses = append(pauses, n)
	}
	stop, err := l.Consume(ctx, 1, func(ev domain.Event, pending uint64) {
		mu.Lock()
		defer mu.Unlock()
		if want := fmt.Sprintf("req-%08d", n); ev.Outcome == nil || ev.Outcome.RequestID != want {
			t.Errorf("event %d is %+v, want %s", n, ev, want)
		}
		n++
		if n == 200 || n == 270 {
			done <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	wait(done, "the first two messages")

	followed := make(chan struct{}, 1)
	fn := 0
	stopFollow, err := l.Follow(ctx, nil, func(domain.Event, uint64) {
		if fn++; fn == 70 {
			followed <- struct{}{}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopFollow()
	lag.Store(0)
	publish(200, 270)
	wait(done, "the live message")
	wait(followed, "the followed message")
	if err := l.Read(ctx, 1, 0, func(domain.Event, uint64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{232, 264}; fmt.Sprint(pauses) != fmt.Sprint(want) {
		t.Fatalf("paused after %v events, want %v (only the fold, only in the live message)", pauses, want)
	}
}
