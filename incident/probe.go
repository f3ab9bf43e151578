package incident

import (
	"strconv"

	"github.com/airouter/airouter/domain"
)

// probeText describes a recovery probe claim: which probe of the ban it
// is and which replica lets the request through.
func probeText(p domain.ProbeClaim) string {
	what := ": one request may reach the banned pair"
	if p.Model == domain.AllModels {
		what = ": one request may use the credential cooling down after a 401"
	}
	return "recovery probe " + strconv.Itoa(p.Interval+1) + " claimed by " + p.Replica + what
}
