package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// Two replicas started at the same moment on a fresh three-node cluster
// both come up: the first creates the streams of three copies, and neither
// fails reading a stream whose leader is still being elected (its requests
// go unanswered until then). Each start is bounded by the log's wait for a
// stream leader; a ban through one is then honoured by the other.
func TestClusterReplicasStartingTogetherOnAFreshCluster(t *testing.T) {
	c := startNATSCluster(t, 3)
	up := newUpstream(t, 200)
	names := []string{"A", "B"}
	cfgs := []*config.Config{clusterConfig(t, c, "", up), clusterConfig(t, c, "", up)}
	routers := make([]*router, len(names))
	errs := make([]error, len(names))
	took := make([]time.Duration, len(names))
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, name := range names {
		wg.Go(func() {
			logger := hclog.New(&hclog.LoggerOptions{Name: name, Output: testkit.Writer(t), Level: hclog.Info})
			<-gate
			began := time.Now()
			routers[i], errs[i] = startRouter(context.Background(), cfgs[i], logger)
			took[i] = time.Since(began)
		})
	}
	close(gate)
	wg.Wait()
	for i, name := range names {
		if errs[i] != nil {
			t.Errorf("start replica %s: %v", name, errs[i])
		} else {
			t.Logf("replica %s started in %s", name, took[i].Round(time.Millisecond))
		}
	}
	if t.Failed() {
		for _, rt := range routers {
			if rt != nil {
				_ = rt.close()
			}
		}
		t.FailNow()
	}
	a, b := serveStarted(t, routers[0]), serveStarted(t, routers[1])
	banAndWait(t, a, b, "cred-a", "m-0")
}
