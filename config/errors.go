package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a config file: the path of the value in
// the document (e.g. "credentials[2].base_url") and what is wrong with it.
// Messages never contain a secret.
type Problem struct {
	Path    string
	Message string
}

// String renders the problem as "path: message".
func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Error lists every problem found in a config file, so that an operator
// fixes them all in one go. Load sets File.
type Error struct {
	File     string
	Problems []Problem
}

// Error renders the problems one per line under a heading.
// MaxShownProblems bounds the problems an Error's text lists (a file of
// millions of bad lines must not make a message, a log line or a reload
// answer of as many); the count says how many there are.
const MaxShownProblems = 100

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		fmt.Fprintf(&b, " %s", e.File)
	}
	if len(e.Problems) == 1 {
		b.WriteString(": " + e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, ": %d problems:", len(e.Problems))
	for i, p := range e.Problems {
		if i == MaxShownProblems {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Problems)-i)
			break
		}
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// sortProblems orders problems as the file reads: by section, in the order
// the sections are documented, then by list item, keeping the order they
// were found in otherwise.
func sortProblems(ps []Problem) {
	sections := []string{"", "server", "fail2ban", "credentials", "models", "model_alias",
		"monitoring", "events", "fallback", "model_bench"}
	rank := func(p Problem) (int, int) {
		head, rest := p.Path, ""
		if i := strings.IndexAny(head, ".["); i >= 0 {
			head, rest = head[:i], head[i:]
		}
		r := slices.Index(sections, head)
		if r < 0 {
			r = len(sections)
		}
		item := -1
		if strings.HasPrefix(rest, "[") {
			if end := strings.IndexByte(rest, ']'); end > 0 {
				item, _ = strconv.Atoi(rest[1:end])
			}
		}
		return r, item
	}
	slices.SortStableFunc(ps, func(a, b Problem) int {
		ra, ia := rank(a)
		rb, ib := rank(b)
		return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(ia, ib))
	})
}
