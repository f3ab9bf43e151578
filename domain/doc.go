// Package domain holds airouter's vocabulary and its pure rules: pair keys
// and credential types with the rules for a credential's name and base URL,
// the versioned events written to the log (kinds, payloads, Valid, log
// positions), the classes of an upstream outcome, the ban policy values
// config builds (BanPolicy), and the pure policy Decide, which turns an
// outcome and the Facts the fold knows about its pair into ban, cooldown and
// bench events. It does no I/O, reads no clock and imports nothing of ours,
// so every other package can share it. An event's path starts here as a
// domain.Outcome built by transport/proxy; eventjson encodes it for
// transport/eventlog, and projections folds it back.
package domain
