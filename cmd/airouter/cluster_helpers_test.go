package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/transport/eventlog"
)

// natsCluster is a JetStream cluster of nats-servers in the test process,
// each node with its own store directory and fixed 127.0.0.1 ports, so a
// node can be stopped and started again where it was.
type natsCluster struct {
	t     testing.TB
	nodes []*natsNode
}

type natsNode struct {
	name        string
	dir         string
	clientPort  int
	clusterPort int
	srv         *server.Server // nil while stopped
}

// clusterWait bounds the waits for the cluster: an election takes up to
// nine seconds (raft's maximum election timeout), a full restart two.
const clusterWait = 45 * time.Second

// startNATSCluster starts n nodes and waits until JetStream has a meta
// leader.
func startNATSCluster(t testing.TB, n int) *natsCluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	c := &natsCluster{t: t}
	for i := range n {
		c.nodes = append(c.nodes, &natsNode{
			name:        fmt.Sprintf("n%d", i+1),
			dir:         filepath.Join(t.TempDir(), fmt.Sprintf("n%d", i+1)),
			clientPort:  ports[2*i],
			clusterPort: ports[2*i+1],
		})
	}
	t.Cleanup(c.stopAll)
	c.startAll()
	return c
}

// freePorts finds n free loopback ports. They are released before the
// servers bind them; another process could take one in between, which on a
// test machine is rare enough.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// URLs is the comma-separated client URL list a replica connects with.
func (c *natsCluster) URLs() string {
	var us []string
	for _, n := range c.nodes {
		us = append(us, fmt.Sprintf("nats://127.0.0.1:%d", n.clientPort))
	}
	return strings.Join(us, ",")
}

func (c *natsCluster) options(n *natsNode) *server.Options {
	var routes []*url.URL
	for _, o := range c.nodes {
		if o != n {
			routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", o.clusterPort)})
		}
	}
	o := &server.Options{
		ServerName:             n.name,
		Host:                   "127.0.0.1",
		Port:                   n.clientPort,
		NoSigs:                 true,
		NoLog:                  true,
		JetStream:              true,
		StoreDir:               n.dir,
		JetStreamMaxStore:      1 << 30,
		JetStreamMaxMemory:     64 << 20,
		DisableJetStreamBanner: true,
		Cluster: server.ClusterOpts{
			Name: "airouter-test",
			Host: "127.0.0.1",
			Port: n.clusterPort,
		},
		Routes: routes,
	}
	if len(c.nodes) == 1 {
		// One node is a plain JetStream server: a cluster of one would
		// wait for peers.
		o.Cluster, o.Routes = server.ClusterOpts{}, nil
	}
	return o
}

// start starts node i (again) on its ports and store directory; it does
// not wait for JetStream.
func (c *natsCluster) start(i int) {
	c.t.Helper()
	n := c.nodes[i]
	if n.srv != nil {
		c.t.Fatalf("nats node %s is already running", n.name)
	}
	s, err := server.NewServer(c.options(n))
	if err != nil {
		c.t.Fatalf("configure nats node %s: %v", n.name, err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		c.t.Fatalf("nats node %s did not accept clients", n.name)
	}
	n.srv = s
}

// stop shuts node i down (a clean shutdown: its raft leaderships are
// handed over first, as in a rolling restart).
func (c *natsCluster) stop(i int) {
	n := c.nodes[i]
	if n.srv == nil {
		return
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.srv = nil
}

func (c *natsCluster) startAll() {
	c.t.Helper()
	for i := range c.nodes {
		c.start(i)
	}
	c.waitMetaLeader()
}

func (c *natsCluster) stopAll() {
	for i := range c.nodes {
		c.stop(i)
	}
}

// waitMetaLeader waits until one running node leads JetStream's meta
// group, every running node knows the current meta state, and the leader
// has heard from every running node (it places a stream's replicas only
// on peers it has current statistics of).
func (c *natsCluster) waitMetaLeader() {
	c.t.Helper()
	if len(c.nodes) == 1 {
		testkit.EventuallyWithin(c.t, clusterWait, "JetStream", func() bool {
			return c.nodes[0].srv != nil && c.nodes[0].srv.JetStreamEnabled()
		})
		return
	}
	testkit.EventuallyWithin(c.t, clusterWait, "a JetStream meta leader that knows every node", func() bool {
		running, leaders, peers := 0, 0, 0
		for _, n := range c.nodes {
			if n.srv == nil {
				continue
			}
			running++
			if !n.srv.JetStreamIsCurrent() {
				return false
			}
			if n.srv.JetStreamIsLeader() {
				leaders++
				peers = len(n.srv.JetStreamClusterPeers())
			}
		}
		return leaders == 1 && peers == running
	})
}

// waitStreamLeader waits until a running node leads the events stream.
func (c *natsCluster) waitStreamLeader() {
	c.t.Helper()
	testkit.EventuallyWithin(c.t, clusterWait, "a leader of "+eventlog.EventsStream, func() bool {
		return c.streamLeader() >= 0
	})
}

// streamLeader is the index of the node leading the events stream, or -1.
func (c *natsCluster) streamLeader() int {
	for i, n := range c.nodes {
		if n.srv != nil && n.srv.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, eventlog.EventsStream) {
			return i
		}
	}
	return -1
}

// clusterConfig is testConfig for a replica of a cluster: the log is the
// cluster's events stream with three replicas, on file storage.
func clusterConfig(t testing.TB, c *natsCluster, extra string, ups ...*upstream) *config.Config {
	t.Helper()
	// Every replica its own id: the default, <host>:<server.port>, is one
	// for all of them here (one host, one configured port).
	events := fmt.Sprintf("events:\n  store_dir: %s\n  storage: file\n  nats_url: %s\n  replicas: 3\n  max_bytes: 64MiB\n  replica_id: test-%d\n",
		filepath.Join(t.TempDir(), "unused"), c.URLs(), replicaSerial.Add(1))
	return buildConfig(t, events, extra, ups...)
}

// replicaSerial numbers the replicas clusterConfig makes.
var replicaSerial atomic.Int64

// startReplica is start for one of several replicas: its log lines carry
// its name.
func startReplica(t testing.TB, name string, cfg *config.Config) *running {
	t.Helper()
	return startReplicaLogging(t, cfg, hclog.New(&hclog.LoggerOptions{Name: name, Output: testkit.Writer(t), Level: hclog.Info}))
}

func startReplicaLogging(t testing.TB, cfg *config.Config, logger hclog.Logger) *running {
	t.Helper()
	name := logger.Name()
	rt, err := startRouter(context.Background(), cfg, logger)
	if err != nil {
		t.Fatalf("start replica %s: %v", name, err)
	}
	return serveStarted(t, rt)
}

// serveStarted serves a started router on a free 127.0.0.1 port until the
// test ends.
func serveStarted(t testing.TB, rt *router) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = rt.close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{router: rt, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- rt.serve(ctx, ln) }()
	t.Cleanup(r.stop)
	return r
}

// blocked reports whether r's routing skips cred for gpt-test now.
func blocked(r *running, cred, model string) bool {
	_, b := r.live.Load().Blocked(cred, model, time.Now())
	return b
}

// nameInLog makes the log name cred/model (a cooldown that has already
// ended, so it holds nothing back), which an admin ban on a model config
// does not route needs: bans are refused on models a credential does not
// serve.
func nameInLog(t testing.TB, r *running, cred, model string) {
	t.Helper()
	now := time.Now().UTC()
	ev := domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted,
		ID: "test-name/" + cred + "/" + model, At: now,
		Cooldown: &domain.Cooldown{Credential: cred, Model: model, Status: 429, Until: now.Add(-time.Second)}}
	seq, err := r.log.PublishControl(t.Context(), ev)
	if err == nil {
		err = r.live.WaitFor(t.Context(), seq)
	}
	if err != nil {
		t.Fatalf("name %s/%s in the log: %v", cred, model, err)
	}
}

// failures is r's count of the pair's failures with code.
func failures(r *running, cred, model, code string) int {
	for _, p := range r.live.Load().StateView(time.Now()).Pairs {
		if p.Credential == cred && p.Model == model {
			return p.ErrorCodeCounts[code]
		}
	}
	return 0
}

// countEvents reads the whole stream through r's log and counts the events
// that match.
func countEvents(t testing.TB, r *running, match func(domain.Event) bool) int {
	t.Helper()
	n, err := tryCountEvents(r, match)
	if err != nil {
		t.Fatalf("read the stream: %v", err)
	}
	return n
}

func tryCountEvents(r *running, match func(domain.Event) bool) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	err := r.log.Read(ctx, 1, 0, func(ev domain.Event, _ uint64) error {
		if ev.Kind != "" && match(ev) {
			n++
		}
		return nil
	})
	return n, err
}

// postJSON posts body to r's path with the master key.
func postJSON(t testing.TB, r *running, path string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, r.url+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testMasterKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// percentiles returns the median and the 99th percentile of ds (nearest
// rank).
func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p int) time.Duration { return s[(len(s)*p+99)/100-1] }
	return rank(50), rank(99)
}
