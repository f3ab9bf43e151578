package adminapi

import (
	"time"

	"github.com/airouter/airouter/projections"
)

// PolicyHealth is /health's policy section: the ban policy this replica
// decides under, and whether its own config file says the same.
type PolicyHealth struct {
	// InForce is the fingerprint of the policy in force: the latest
	// policy.changed on the log, or the file's on a log without one.
	InForce string `json:"in_force"`
	// Fingerprint is the fingerprint of this replica's file's policy
	// (absent where there is no file, as in replay).
	Fingerprint string `json:"fingerprint,omitempty"`
	// FileDiffers is true while the policy in force is not the file's:
	// another replica announced its own later (the last change wins).
	FileDiffers bool `json:"file_differs"`
	// ChangedAt and AnnouncedBy say when and by which replica the policy
	// in force was announced; absent before any policy.changed.
	ChangedAt   *time.Time `json:"changed_at,omitempty"`
	AnnouncedBy string     `json:"announced_by,omitempty"`
}

// policyHealth is the policy section for snap: nil when neither the log
// holds a policy nor the wiring gave the file's (Deps.FilePolicy).
func (a *API) policyHealth(snap *projections.Snapshot) *PolicyHealth {
	var file string
	if a.deps.FilePolicy != nil {
		file = a.deps.FilePolicy()
	}
	in := snap.Policy()
	switch {
	case in == nil && file == "":
		return nil
	case in == nil:
		return &PolicyHealth{InForce: file, Fingerprint: file}
	}
	at := in.At
	return &PolicyHealth{
		InForce: in.Fingerprint, Fingerprint: file,
		FileDiffers: file != "" && file != in.Fingerprint,
		ChangedAt:   &at, AnnouncedBy: in.Replica,
	}
}
