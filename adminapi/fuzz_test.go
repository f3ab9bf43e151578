package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/mux"
)

// adminRoute is an admin API route that decodes a JSON body, with the
// fields its body may hold.
type adminRoute struct {
	method, path string
	fields       []string
}

var adminRoutes = []adminRoute{
	{http.MethodPost, "/api/ban", []string{"credential", "model", "ttl", "reason"}},
	{http.MethodPost, "/api/unban", []string{"credential", "model"}},
	{http.MethodPut, "/api/fallback", []string{"max_hops", "time_budget", "expose_detail_headers"}},
	{http.MethodPost, "/api/unbench", []string{"model"}},
	{http.MethodPost, "/api/reload", nil},
}

// adminSeeds are bodies of the shapes operators send, and near misses.
var adminSeeds = []string{
	`{"credential":"openai-1","model":"gpt-4o","ttl":"30m","reason":"maintenance"}`,
	`{"credential":"openai-2"}`, `{"model":"gpt-4o"}`, `{"model":"never-benched"}`,
	`{"credential":" claude-1 ","model":"claude-sonnet","ttl":null}`,
	`{"credential":"openai-1","model":"gpt-4o-mini","ttl":1800}`,
	`{"credential":"openai-1","ttl":"-5s"}`,
	`{"credential":"nobody","model":"x"}`,
	`{"credential":"openai-1","model":"` + strings.Repeat("m", 300) + `"}`,
	`{"max_hops":3,"time_budget":"45s","expose_detail_headers":true}`,
	`{"max_hops":0}`, `{"time_budget":"0s"}`, `{"max_hops":1e400}`, `{"time_budget":45}`,
	`{"credentail":"openai-1"}`, `{"maxhops":2}`, `{"Credential":"openai-1"}`,
	`{"credential":"openai-1"} {"credential":"openai-2"}`,
	`{}`, `null`, `[]`, `{`, ``, `"x"`,
}

// plainKey is a key the unknown-field check is asserted on: the message
// quotes it, and nothing in it looks like a secret to the redactor.
var plainKey = regexp.MustCompile(`^[a-z_]{1,24}$`)

// FuzzAdminBody: whatever body an operator sends to /api/ban, /api/unban,
// /api/unbench, POST /api/reload or PUT /api/fallback, the real handler (on
// a real embedded event log) answers without a panic and never with a 5xx; a
// JSON object whose first member is not a field of the route is a 400
// naming that field, and a body /api/reload refuses never reaches the
// reload.
func FuzzAdminBody(f *testing.F) {
	for i, s := range adminSeeds {
		f.Add(uint8(i), []byte(s))
	}
	r := newRig(f)
	router := mux.NewRouter()
	r.api.Register(router)
	var reloads int
	r.api.RegisterReload(router, func(context.Context) (int, any) {
		reloads++
		return http.StatusOK, map[string]bool{"reloaded": true}
	})
	var h http.Handler = router
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		rt := adminRoutes[int(which)%len(adminRoutes)]
		req := httptest.NewRequest(rt.method, rt.path, bytes.NewReader(b)).WithContext(r.ctx)
		req.Header.Set("Authorization", "Bearer "+masterKey)
		rec := httptest.NewRecorder()
		before := reloads
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: status %d: %s", rt.method, rt.path, b, rec.Code, rec.Body)
		}
		if rt.path == "/api/reload" && (rec.Code == http.StatusOK) != (reloads == before+1) {
			t.Fatalf("%s %s %q: status %d after %d reloads: a refused body reloaded, or an accepted one did not", rt.method, rt.path, b, rec.Code, reloads-before)
		}
		key, ok := firstKey(b)
		if !ok || len(b) > maxBodyBytes || !plainKey.MatchString(key) || slices.Contains(rt.fields, key) {
			return
		}
		want := "unknown field " + strconv.Quote(key)
		if rec.Code != http.StatusBadRequest || !strings.Contains(errorMessage(t, rec.Body.String()), want) {
			t.Fatalf("%s %s %q: status %d %s, want 400 naming %s", rt.method, rt.path, b, rec.Code, rec.Body, want)
		}
	})
}

// firstKey is the first key of b when b is a valid JSON object with at
// least one member, as encoding/json reads it.
func firstKey(b []byte) (string, bool) {
	if !json.Valid(b) {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') || !dec.More() {
		return "", false
	}
	tok, err := dec.Token()
	if err != nil {
		return "", false
	}
	key, _ := tok.(string)
	return key, true
}
