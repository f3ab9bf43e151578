package adminapi

import "time"

// ReplicaHealth is one router heard from on the log, as /health's log
// section lists it: its replica id, the time of its latest heartbeat and
// the fingerprint of the policy in its file ("" when it reported none).
type ReplicaHealth struct {
	Replica           string    `json:"replica"`
	LastHeard         time.Time `json:"last_heard"`
	PolicyFingerprint string    `json:"policy_fingerprint"`
	// Self marks the router answering.
	Self bool `json:"self,omitempty"`
}
