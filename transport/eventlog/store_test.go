package eventlog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A refusal for lack of room, from the server's API answer or the disk's
// error text, is named a full store; other errors are not.
func TestStoreFullCauseClassifiesPublishErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}, "store full: insufficient resources"},
		{fmt.Errorf("publish: %w", &jetstream.APIError{Code: 500, ErrorCode: 10047, Description: "insufficient storage resources available"}),
			"store full: insufficient storage resources available"},
		{errors.New("write /s/1.blk: no space left on device"), "store full: no space left on device"},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence"}, ""},
		{jetstream.ErrNoStreamResponse, ""},
		{nil, ""},
	} {
		if got := storeFullCause(tc.err); got != tc.want {
			t.Errorf("storeFullCause(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// An asynchronous publish the store refused for lack of room makes the log
// unwritable with the cause, and is held to be sent again, not failed.
func TestStoreFullRefusalHoldsTheEvent(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	p := l.pub
	p.asyncErr(nil, outcomeMsg(t), &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"})
	// Held: in the retry queue, or already taken by the publisher, which
	// waits for the store; either way it is pending, not failed.
	s := l.Stats()
	if s.Writable || s.StoreFault != "store full: insufficient resources" || s.Failed != 0 || s.Pending != 1 {
		t.Fatalf("after a refusal: writable %v fault %q failed %d pending %d", s.Writable, s.StoreFault, s.Failed, s.Pending)
	}
	// The embedded store is in fact fine: its check clears the fault and
	// the held event is stored.
	testkit.Eventually(t, "the fault cleared", func() bool { return l.Stats().Writable })
	if err := l.Flush(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats(); s.Published != 1 || s.Failed != 0 {
		t.Fatalf("published %d failed %d, want the held event stored", s.Published, s.Failed)
	}
}

func outcomeMsg(t *testing.T) *nats.Msg {
	t.Helper()
	var it pubItem
	if err := encodeItem(&it, outcomeEvent(1)); err != nil {
		t.Fatal(err)
	}
	return &nats.Msg{Subject: pairSubject("outcome.", it.pair.Credential, it.pair.Model), Data: it.data}
}

// With the store on a full filesystem the log says so and holds events;
// once space is freed it restarts JetStream by itself, stores what it held
// and takes control events again, and every event acknowledged before the
// disk filled is still there.
func TestFullStoreIsReportedAndRecovers(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { testFullStore(t, nil) })
	// The server process reports the fault and, with room again, exits
	// for a new one.
	t.Run("own process", func(t *testing.T) { testFullStore(t, testProcess()) })
}

func testFullStore(t *testing.T, proc *Process) {
	fs := testkit.SmallFS(t, 32<<20)
	l := openTest(t, Options{StoreDir: filepath.Join(fs, "store"), Process: proc})
	ctx := testkit.Context(t)
	for i := range 20 {
		l.Publish(outcomeEvent(i))
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := l.Stats().Published

	free := testkit.FillFS(t, fs)
	next := 20
	testkit.Eventually(t, "the store reported full", func() bool {
		l.Publish(outcomeEvent(next))
		next++
		return strings.HasPrefix(l.Stats().StoreFault, "store full:")
	})
	held := next
	for i := next; i < next+10; i++ {
		l.Publish(outcomeEvent(i))
	}
	next += 10
	if s := l.Stats(); s.Writable || !strings.Contains(s.LastError, "store full") {
		t.Fatalf("while full: writable %v last error %q", s.Writable, s.LastError)
	}
	if _, err := l.PublishControl(ctx, banEvent("ban-full", "cred-01", "m")); !errors.Is(err, errStoreFaulted) {
		t.Fatalf("ban while full: %v, want it refused at once as a store fault", err)
	}

	free()
	testkit.Eventually(t, "the store writable again", func() bool {
		s := l.Stats()
		return s.Writable && s.StoreFault == "" && s.StoreRestarts == 1
	})
	if _, err := l.PublishControl(ctx, banEvent("ban-after", "cred-01", "m")); err != nil {
		t.Fatalf("ban after space was freed: %v", err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, ev := range readAll(t, l) {
		if ev.Kind == domain.KindOutcomeRecorded {
			stored[ev.Outcome.RequestID] = true
		}
	}
	s := l.Stats()
	if uint64(len(stored)) != s.Published {
		t.Errorf("stored %d outcomes, acknowledged %d", len(stored), s.Published)
	}
	for i := range int(before) {
		if !stored[outcomeEvent(i).Outcome.RequestID] {
			t.Errorf("outcome %d, acknowledged before the disk filled, is gone", i)
		}
	}
	for i := held; i < next; i++ {
		if !stored[outcomeEvent(i).Outcome.RequestID] {
			t.Errorf("outcome %d, held while the disk was full, was not stored", i)
		}
	}
}
