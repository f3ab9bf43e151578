// Package domain holds airouter's plain types and rules: the names of
// credentials and models, the versioned event vocabulary written to the log,
// the classification of an upstream outcome, and the ban policy values that
// config produces. It does no I/O, reads no clock and imports nothing of ours.
package domain
