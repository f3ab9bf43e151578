//go:build tools

// Package tools pins dependencies that the packages under construction import,
// so that parallel work on them does not race on go.mod. Removed once every
// dependency is imported by real code.
package tools

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/gorilla/mux"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/openai/openai-go/v3"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sys/unix"
	_ "pgregory.net/rapid"
)
