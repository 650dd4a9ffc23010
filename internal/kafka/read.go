package kafka

import (
	"context"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// ReadBatch is the waiting loop of a consumer input's ReadBatch. next is
// called until it returns a batch or an error (service.ErrEndOfInput,
// service.ErrNotConnected); otherwise it returns how long to wait at most
// (0: until woken) and a channel that is closed when something changes (new
// records, an acknowledgement, a rebalance). next takes the input's lock
// itself.
func ReadBatch(ctx context.Context, next func() (service.MessageBatch, service.AckFunc, time.Duration, <-chan struct{}, error)) (service.MessageBatch, service.AckFunc, error) {
	for {
		batch, ack, wait, notify, err := next()
		if err != nil {
			return nil, nil, err
		}
		if batch != nil {
			return batch, ack, nil
		}
		var timer *time.Timer
		var timeout <-chan time.Time
		if wait > 0 {
			timer = time.NewTimer(wait)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil, nil, ctx.Err()
		case <-notify:
		case <-timeout:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
