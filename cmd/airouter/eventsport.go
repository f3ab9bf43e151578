package main

import (
	"context"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/transport/eventlog"
)

// eventsLog is the router's eventlog.Log as adminapi's EventLog, the port
// GET /api/events reads the log through.
type eventsLog struct{ l *eventlog.Log }

func (e eventsLog) Consume(ctx context.Context, from uint64, fn func(domain.Event, uint64)) (func(), error) {
	return e.l.Consume(ctx, from, fn)
}

func (e eventsLog) LastSeq(ctx context.Context) (uint64, error) { return e.l.LastSeq(ctx) }

func (e eventsLog) SeqAt(ctx context.Context, t time.Time) (uint64, error) { return e.l.SeqAt(ctx, t) }
