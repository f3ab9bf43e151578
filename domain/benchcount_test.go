package domain

// Helpers of the bench cases that count one request's failure once.

// ofRequest marks failures as one request's, with code and body phase.
func ofRequest(id string, code int, unsent bool, fs []ModelFailure) []ModelFailure {
	for i := range fs {
		fs[i].RequestID, fs[i].Code, fs[i].BodyUnsent = id, code, unsent
	}
	return fs
}

// bodyUnsent marks every failure as failed while the body was sent, and
// the i-th with code.
func bodyUnsent(fs []ModelFailure, i, code int) []ModelFailure {
	for j := range fs {
		fs[j].BodyUnsent = true
	}
	fs[i].Code = code
	return fs
}

// withCode gives the i-th failure code.
func withCode(fs []ModelFailure, i, code int) []ModelFailure {
	fs[i].Code = code
	return fs
}
