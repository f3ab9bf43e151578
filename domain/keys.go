package domain

import (
	"cmp"
	"strings"
)

// AllModels is the model of a ban that covers every model of a credential,
// including models the router learns after the ban was made.
const AllModels = "*"

// Key names one credential+model pair. It is comparable, so it is used
// directly as a map key; nothing ever splits a concatenated string.
type Key struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
}

// Wildcard reports whether the key covers every model of its credential.
func (k Key) Wildcard() bool { return k.Model == AllModels }

// String renders the key as "credential/model" for logs and trails.
func (k Key) String() string { return k.Credential + "/" + k.Model }

// Compare orders keys by credential, then model, as every list of pairs
// is sorted: -1, 0 or +1 as k sorts before, with or after o. It is the
// comparison function for slices.SortFunc(keys, domain.Key.Compare).
func (k Key) Compare(o Key) int {
	return cmp.Or(strings.Compare(k.Credential, o.Credential), strings.Compare(k.Model, o.Model))
}
