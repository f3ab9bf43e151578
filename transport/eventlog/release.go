package eventlog

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Stopping an ordered consumer's delivery leaves its consumer on the server
// until the server's inactivity limit (five minutes) removes it, and a
// stream holds at most 1,000 consumers (nats-server's default). Every read
// of the log makes one (a view of the past, a timeline, a lookup of a
// moment, replay, export), so 1,000 views within five minutes, which need
// no key, would fill the stream's consumers, and then the router could not
// replace its own consumer, follow the log for /api/events or tail, nor
// show the past. The log therefore deletes a consumer as soon as it is done
// with it.

// releaseTimeout bounds the deletion of one consumer.
const releaseTimeout = 2 * time.Second

// release deletes the server's consumer behind oc, which is no longer
// read. Nothing is done while disconnected (the server's inactivity limit
// removes it then); a failure is logged at debug level only: the limit
// removes it too.
func (c *conn) release(oc jetstream.Consumer) {
	if oc == nil || !c.connected() {
		return
	}
	info := oc.CachedInfo()
	if info == nil || info.Name == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := c.cur().js.DeleteConsumer(ctx, EventsStream, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		c.log.Debug("could not delete a consumer no longer read; the server removes it once inactive", "consumer", info.Name, "error", err)
	}
}
