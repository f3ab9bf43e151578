package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/airouter/airouter/config"
)

// A service outside airouter follows bans with plain nats.go: it subscribes
// to airouter.events.ban.> on the router's embedded NATS server
// (events.listen) and receives the ban an operator makes through the admin
// API. Nothing of airouter is imported by the subscriber; the payload is the
// documented JSON of a ban.imposed event.
func Example_subscribeToBans() {
	router, stop, err := exampleRouter()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	// The subscriber: core NATS, no JetStream needed to follow live bans.
	nc, err := nats.Connect(router.natsURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("airouter.events.ban.>")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := nc.Flush(); err != nil { // the subscription is in place
		fmt.Println(err)
		return
	}

	// An operator drains cred-a for 30 minutes.
	body := []byte(`{"credential":"cred-a","ttl":"30m","reason":"air-scaler drain"}`)
	req, _ := http.NewRequest(http.MethodPost, router.httpURL+"/api/ban", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+exampleMasterKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()

	msg, err := sub.NextMsg(10 * time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	var ev struct {
		V    int    `json:"v"`
		Kind string `json:"kind"`
		Ban  struct {
			Credential string     `json:"credential"`
			Model      string     `json:"model"`
			Origin     string     `json:"origin"`
			Reason     string     `json:"reason"`
			Permanent  bool       `json:"permanent"`
			Until      *time.Time `json:"until"`
		} `json:"ban"`
	}
	if err := json.Unmarshal(msg.Data, &ev); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(msg.Subject)
	fmt.Println(ev.V, ev.Kind, ev.Ban.Credential, ev.Ban.Model, ev.Ban.Origin, ev.Ban.Reason, ev.Ban.Permanent, ev.Ban.Until != nil)
	// Output:
	// airouter.events.ban.cred-a.~2A
	// 1 ban.imposed cred-a * admin admin: air-scaler drain false true
}

const exampleMasterKey = "sk-example-master-0123456789"

// exampleServer is a running router: its HTTP address and its NATS URL.
type exampleServer struct {
	httpURL, natsURL string
}

// exampleRouter starts a router on a fresh store whose embedded NATS
// server listens on a random loopback port.
func exampleRouter() (exampleServer, func(), error) {
	dir, err := os.MkdirTemp("", "airouter-example-")
	if err != nil {
		return exampleServer{}, nil, err
	}
	yaml := fmt.Sprintf("server:\n  master_key: %s\n  shutdown_delay: 0s\nevents:\n  store_dir: %s/data\n  listen: 127.0.0.1:4222\n"+
		"credentials:\n  - name: cred-a\n    type: openai\n    api_key: sk-example-upstream\n    base_url: http://127.0.0.1:9/v1\n",
		exampleMasterKey, dir)
	cfg, err := config.Parse([]byte(yaml), nil)
	if err != nil {
		os.RemoveAll(dir)
		return exampleServer{}, nil, err
	}
	cfg.Events.Listen = "127.0.0.1:0" // any free port; config itself asks for a fixed one
	rt, err := startRouter(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		os.RemoveAll(dir)
		return exampleServer{}, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.close()
		os.RemoveAll(dir)
		return exampleServer{}, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.serve(ctx, ln) }()
	stop := func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
	return exampleServer{httpURL: "http://" + ln.Addr().String(), natsURL: rt.log.ClientURL()}, stop, nil
}
