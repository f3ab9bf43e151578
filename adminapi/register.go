package adminapi

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// registerAll registers each of cs on reg; what names the group in the
// error, as "register the <what>: ...".
func registerAll(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register the %s: %w", what, err)
		}
	}
	return nil
}
