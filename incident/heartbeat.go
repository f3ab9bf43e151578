package incident

import "github.com/airouter/airouter/domain"

// heartbeatText describes a replica's heartbeat: its id, its process
// instance and the fingerprint of the policy in its file.
func heartbeatText(h domain.Heartbeat) string {
	text := "replica " + h.Replica + " alive (instance " + h.Instance
	if h.PolicyFingerprint != "" {
		text += ", policy " + h.PolicyFingerprint
	}
	return text + ")"
}
