package domain

// KindReplicaHeartbeat: a router says it is alive (Event.Heartbeat). Each
// replica publishes one at start and every HeartbeatEvery, so replicas that
// serve no traffic are seen too, and two live processes sharing one
// events.replica_id find each other by their different instances.
const KindReplicaHeartbeat Kind = "replica.heartbeat"

// Heartbeat is one replica's sign of life.
type Heartbeat struct {
	// Replica is the router's events.replica_id, the name its outcomes
	// and probe claims carry.
	Replica string `json:"replica"`
	// Instance is random per process: the same Replica with another
	// Instance is another process using the same id.
	Instance string `json:"instance"`
	// PolicyFingerprint is the fingerprint of the ban policy in the
	// replica's file; empty when the replica reports none.
	PolicyFingerprint string `json:"policy_fingerprint,omitempty"`
}
