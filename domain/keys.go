package domain

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
