package eventlog

import "strings"

// ProcessEnv is the environment a server process gets out of its router's:
// the Go runtime's settings and the few variables the system and its
// libraries read (a binary linked against shared libraries may need
// LD_LIBRARY_PATH to start at all). Nothing else goes: the router's environment may hold
// provider keys (GOOGLE_API_KEY among them, so not every GO* passes) and
// the master key, which the server, told what it needs on its stdin, has
// no use for. The result is never nil: exec.Cmd would read a nil Env as
// the whole of the router's.
func ProcessEnv(environ []string) []string {
	out := []string{}
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if ok && processNeeds(name) {
			out = append(out, kv)
		}
	}
	return out
}

func processNeeds(name string) bool {
	switch name {
	case "GOMEMLIMIT", "GOGC", "GODEBUG", "GOMAXPROCS", "GOTRACEBACK", "GORACE", "GOCOVERDIR", "ZONEINFO",
		"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LD_LIBRARY_PATH":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}
