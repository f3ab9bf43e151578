package config_test

import (
	"testing"

	"github.com/airouter/airouter/config"
)

// BenchmarkParse parses the fixture that sets every key.
func BenchmarkParse(b *testing.B) {
	data := read(b, fixtures+"/full.good.yaml")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := config.Parse(data, testEnv); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoutes builds the route table of the fixture that sets every
// key, as the wiring does once at start.
func BenchmarkRoutes(b *testing.B) {
	cfg, err := config.Parse(read(b, fixtures+"/full.good.yaml"), testEnv)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		cfg.Routes()
	}
}
