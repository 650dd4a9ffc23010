package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadState is what ReadBatch answers before the input is connected or
// after it closed: service.ErrEndOfInput once closed, else
// service.ErrNotConnected while there is no client, else nil.
func ReadState(closed bool, cl *kgo.Client) error {
	switch {
	case closed:
		return service.ErrEndOfInput
	case cl == nil:
		return service.ErrNotConnected
	}
	return nil
}

// ReadBatch is the waiting loop of a consumer input's ReadBatch. next is
// called, with mu (the input's lock) held, until it returns a batch or an
// error (ReadState's); otherwise it returns how long to wait at most (0:
// until woken) and a channel that is closed when something changes (new
// records, an acknowledgement, a rebalance).
func ReadBatch(ctx context.Context, mu sync.Locker, next func() (service.MessageBatch, service.AckFunc, time.Duration, <-chan struct{}, error)) (service.MessageBatch, service.AckFunc, error) {
	for {
		mu.Lock()
		batch, ack, wait, notify, err := next()
		mu.Unlock()
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
