package domain

import "time"

// The cases TestDecide and TestDecideDeterministic run, by rule: Fail2Ban
// bans, cooldowns that honour Retry-After, and model-wide benches; failures
// builds a model's failure facts for them and for decide_test.go.

type decideCase struct {
	name   string
	policy BanPolicy
	ev     Event
	facts  Facts
	want   []Event
}

// failures lists model failures, one per credential, at t0+sec seconds.
func failures(credSec ...any) []ModelFailure {
	var out []ModelFailure
	for i := 0; i+1 < len(credSec); i += 2 {
		sec := credSec[i+1].(int)
		out = append(out, ModelFailure{Credential: credSec[i].(string),
			At: t0.Add(time.Duration(sec) * time.Second), Seq: uint64(max(sec, 0))})
	}
	return out
}

func fail2banCases() []decideCase {
	p := examplePolicy()
	e500 := outcomeEv(7, "openai-1", "gpt-4o", 500, ClassServerError)
	e429 := outcomeEv(8, "openai-1", "gpt-4o", 429, ClassRateLimited)
	c400 := outcomeEv(9, "cometapi-pool-1", "gpt-4o", 400, ClassClientError)
	c429 := outcomeEv(10, "cometapi-pool-1", "gpt-4o", 429, ClassRateLimited)
	timeout := outcomeEv(11, "openai-1", "gpt-4o", 0, ClassTimeout)
	conn := outcomeEv(12, "openai-1", "gpt-4o", 0, ClassConnection)
	watch408 := examplePolicy()
	watch408.Codes = append(watch408.Codes, 408)
	zero := examplePolicy()
	zero.Rules = map[int]Rule{500: {MaxAttempts: 0, Duration: time.Minute}}
	noDuration := examplePolicy()
	noDuration.Default = Rule{MaxAttempts: 3}
	return []decideCase{
		{"unwatched code is never counted", p, outcomeEv(1, "openai-1", "gpt-4o", 400, ClassClientError), counts(400, 9), nil},
		{"2xx decides nothing", p, outcomeEv(2, "openai-1", "gpt-4o", 200, ClassOK), Facts{}, nil},
		{"empty completion 200 decides nothing", p, outcomeEv(3, "openai-1", "gpt-4o", 200, ClassEmptyCompletion), counts(200, 3), nil},
		{"counters are per code: 2x429 + 2x500 ban nothing", p, e500, counts(429, 2, 500, 2), nil},
		{"below the threshold", p, e500, counts(500, 2), nil},
		{"top-level rule bans permanently at the threshold", p, e500, counts(429, 2, 500, 3),
			[]Event{banEv(e500, 500, 3, 0, "3 x 500 (max_attempts 3, ban permanent)")}},
		{"past the threshold (ban lost, or not folded yet) bans again, in the streak's name", p, e500, counts(500, 4),
			[]Event{banEv(e500, 500, 4, 0, "4 x 500 (max_attempts 3, ban permanent)")}},
		{"past the threshold of another code, this code below its own, bans nothing", p, e429, counts(500, 4, 429, 4), nil},
		{"global per-code rule raises the threshold", p, e429, counts(429, 3), nil},
		{"global per-code rule bans for its duration", p, e429, counts(429, 5),
			[]Event{banEv(e429, 429, 5, 5*time.Minute, "5 x 429 (rule 429: max_attempts 5, ban 5m)")}},
		{"credential override watches 400", p, c400, counts(400, 3),
			[]Event{banEv(c400, 400, 3, 15*time.Minute, "3 x 400 (credential rule 400: max_attempts 3, ban 15m)")}},
		{"400 is not watched for a credential without override", p,
			outcomeEv(9, "openai-1", "gpt-4o", 400, ClassClientError), counts(400, 3), nil},
		{"override codes replace the global list (401 dropped)", p,
			outcomeEv(9, "cometapi-pool-1", "gpt-4o", 401, ClassAuth), counts(401, 3), nil},
		{"override falls back to the global rule for its other codes", p, c429, counts(429, 5),
			[]Event{banEv(c429, 429, 5, 5*time.Minute, "5 x 429 (rule 429: max_attempts 5, ban 5m)")}},
		{"a banned pair decides nothing", p, e500, Facts{Counts: map[int]int{500: 3}, Banned: true, BanPermanent: true}, nil},
		{"timeout counts as 408", watch408, timeout, counts(408, 3),
			[]Event{banEv(timeout, 408, 3, 0, "3 x 408 (max_attempts 3, ban permanent)")}},
		{"timeout unwatched by default", p, timeout, counts(408, 3), nil},
		{"connection failure counts as 502", p, conn, counts(502, 3),
			[]Event{banEv(conn, 502, 3, 0, "3 x 502 (max_attempts 3, ban permanent)")}},
		{"proxy outcome never bans", p, asProxy(e500), counts(500, 3), nil},
		{"proxy credential never bans", p, outcomeEv(7, "relay-1", "gpt-4o", 500, ClassServerError), counts(500, 3), nil},
		{"canceled decides nothing", p, outcomeEv(7, "openai-1", "gpt-4o", 0, ClassCanceled), counts(0, 3, 502, 3), nil},
		{"max_attempts 0 bans on the first error", zero, e500, counts(500, 1),
			[]Event{banEv(e500, 500, 1, time.Minute, "1 x 500 (rule 500: max_attempts 0, ban 1m)")}},
		{"no duration means permanent", noDuration, e500, counts(500, 3),
			[]Event{banEv(e500, 500, 3, 0, "3 x 500 (max_attempts 3, ban permanent)")}},
		{"not an outcome", p, Event{Kind: KindBanLifted, Seq: 3, Unban: &Unban{Credential: "a"}}, counts(500, 3), nil},
	}
}

func cooldownCases() []decideCase {
	p := examplePolicy()
	r429 := withRetryAfter(outcomeEv(20, "openai-1", "gpt-4o", 429, ClassRateLimited), 30_000)
	r503 := withRetryAfter(outcomeEv(21, "openai-1", "gpt-4o", 503, ClassServerError), 2_500)
	long := withRetryAfter(outcomeEv(22, "openai-1", "gpt-4o", 429, ClassRateLimited), 48*3600*1000)
	relay := withRetryAfter(outcomeEv(23, "relay-1", "gpt-4o", 429, ClassRateLimited), 60_000)
	both := withRetryAfter(outcomeEv(24, "openai-1", "gpt-4o", 429, ClassRateLimited), 600_000)
	until := func(ev Event, d time.Duration) time.Time { return ev.At.Add(d) }
	return []decideCase{
		{"429 with Retry-After cools the pair", p, r429, counts(429, 1), []Event{cooldownEv(r429, 30*time.Second)}},
		{"503 with Retry-After cools the pair", p, r503, counts(503, 1), []Event{cooldownEv(r503, 2500*time.Millisecond)}},
		{"Retry-After is capped at 24h", p, long, counts(429, 1), []Event{cooldownEv(long, 24*time.Hour)}},
		{"429 without Retry-After does not cool", p, outcomeEv(25, "openai-1", "gpt-4o", 429, ClassRateLimited), counts(429, 1), nil},
		{"500 with Retry-After does not cool", p,
			withRetryAfter(outcomeEv(26, "openai-1", "gpt-4o", 500, ClassServerError), 5000), counts(500, 1), nil},
		{"permanently banned pair does not cool", p, r429, Facts{Banned: true, BanPermanent: true}, nil},
		{"pair banned longer does not cool", p, r429, Facts{Banned: true, BanUntil: until(r429, time.Minute)}, nil},
		{"pair banned exactly as long does not cool", p, r429, Facts{Banned: true, BanUntil: until(r429, 30*time.Second)}, nil},
		{"pair banned shorter still cools", p, r429, Facts{Banned: true, BanUntil: until(r429, time.Second)},
			[]Event{cooldownEv(r429, 30*time.Second)}},
		{"pair cooling longer does not cool again", p, r429, Facts{CooldownUntil: until(r429, 30*time.Second)}, nil},
		{"pair cooling shorter cools longer", p, r429, Facts{CooldownUntil: until(r429, 10*time.Second)},
			[]Event{cooldownEv(r429, 30*time.Second)}},
		{"proxy credential is cooled, not banned", p, relay, counts(429, 5), []Event{cooldownEv(relay, time.Minute)}},
		{"ban and cooldown from one outcome: ban first", p, both, counts(429, 5), []Event{
			banEv(both, 429, 5, 5*time.Minute, "5 x 429 (rule 429: max_attempts 5, ban 5m)"),
			cooldownEv(both, 10*time.Minute)}},
		{"canceled with Retry-After does not cool", p,
			withRetryAfter(outcomeEv(27, "openai-1", "gpt-4o", 429, ClassCanceled), 5000), Facts{}, nil},
	}
}

func benchCases() []decideCase {
	p := examplePolicy()
	off := examplePolicy()
	off.Bench.Failures = 0
	b502 := outcomeEv(600, "b", "llama", 502, ClassServerError)
	bTimeout := outcomeEv(600, "b", "llama", 0, ClassTimeout)
	relay := asProxy(outcomeEv(600, "relay-1", "llama", 503, ClassServerError))
	b429 := outcomeEv(600, "b", "llama", 429, ClassRateLimited)
	twoCreds := Facts{ModelFailures: failures("a", 10, "c", 20, "b", 600)}
	return []decideCase{
		{"failures on two credentials within the window bench the model", p, b502, twoCreds,
			[]Event{benchEv(b502, 10*time.Minute, 3, []string{"a", "b", "c"},
				"3 failures on 3 credentials within 15m (last: 502)")}},
		{"credentials are sorted and distinct", p, bTimeout,
			Facts{ModelFailures: failures("b", 10, "a", 20, "b", 600)},
			[]Event{benchEv(bTimeout, 10*time.Minute, 3, []string{"a", "b"},
				"3 failures on 2 credentials within 15m (last: timeout)")}},
		{"failures from one credential never bench", p, b502, Facts{ModelFailures: failures("b", 10, "b", 20, "b", 600)}, nil},
		{"too few failures", p, b502, Facts{ModelFailures: failures("a", 10, "b", 600)}, nil},
		{"failures outside the window do not count", p, b502,
			Facts{ModelFailures: failures("a", -300, "c", 20, "b", 600)}, nil},
		{"already benched past the outcome", p, b502,
			Facts{ModelFailures: twoCreds.ModelFailures, BenchedUntil: b502.At.Add(time.Second)}, nil},
		{"an ended bench does not hold back a new one", p, b502,
			Facts{ModelFailures: twoCreds.ModelFailures, BenchedUntil: b502.At},
			[]Event{benchEv(b502, 10*time.Minute, 3, []string{"a", "b", "c"},
				"3 failures on 3 credentials within 15m (last: 502)")}},
		{"429 is the credential's, not the model's", p, b429, twoCreds, nil},
		{"benching off", off, b502, twoCreds, nil},
		{"one request's same failure on three credentials counts once", p, b502,
			Facts{ModelFailures: ofRequest("r1", 502, false, failures("a", 10, "c", 20, "b", 600))}, nil},
		{"one request's body refused on three credentials counts once", p, bTimeout,
			Facts{ModelFailures: bodyUnsent(ofRequest("r1", 502, false, failures("a", 10, "c", 20, "b", 600)), 2, 408)}, nil},
		{"one request's different failures count apart", p, b502,
			Facts{ModelFailures: withCode(withCode(ofRequest("r1", 502, false, failures("a", 10, "c", 20, "b", 600)), 1, 503), 2, 500)},
			[]Event{benchEv(b502, 10*time.Minute, 3, []string{"a", "b", "c"},
				"3 failures on 3 credentials within 15m (last: 502)")}},
		{"three requests count three", p, b502,
			Facts{ModelFailures: append(append(ofRequest("r1", 502, true, failures("a", 10, "c", 11)),
				ofRequest("r2", 502, true, failures("a", 20, "c", 21))...),
				ofRequest("r3", 502, true, failures("b", 600))...)},
			[]Event{benchEv(b502, 10*time.Minute, 3, []string{"a", "b", "c"},
				"3 failures on 3 credentials within 15m (last: 502)")}},
		{"proxy failures count toward the bench", p, relay,
			Facts{ModelFailures: failures("a", 10, "a", 20, "relay-1", 600)},
			[]Event{benchEv(relay, 10*time.Minute, 3, []string{"a", "relay-1"},
				"3 failures on 2 credentials within 15m (last: 503)")}},
	}
}

func allCases() []decideCase {
	return append(append(fail2banCases(), cooldownCases()...), benchCases()...)
}
