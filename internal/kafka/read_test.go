package kafka

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadBatchWaitsUntilWokenOrDue: next is asked again when its channel
// closes or its wait ends, and its batch or error is returned.
func TestReadBatchWaitsUntilWokenOrDue(t *testing.T) {
	notify := make(chan struct{})
	asked := make(chan struct{})
	var calls atomic.Int32
	go func() {
		<-asked
		close(notify)
	}()
	batch, _, err := ReadBatch(context.Background(), &sync.Mutex{}, func() (service.MessageBatch, service.AckFunc, time.Duration, <-chan struct{}, error) {
		switch calls.Add(1) {
		case 1: // nothing yet, no deadline: woken by notify, closed once asked
			close(asked)
			return nil, nil, 0, notify, nil
		case 2: // nothing yet, a period ends in 10ms
			return nil, nil, 10 * time.Millisecond, make(chan struct{}), nil
		}
		return service.MessageBatch{service.NewMessage([]byte("x"))}, func(context.Context, error) error { return nil }, 0, nil, nil
	})
	require.NoError(t, err)
	assert.Len(t, batch, 1)
	assert.EqualValues(t, 3, calls.Load())

	_, _, err = ReadBatch(context.Background(), &sync.Mutex{}, func() (service.MessageBatch, service.AckFunc, time.Duration, <-chan struct{}, error) {
		return nil, nil, 0, nil, service.ErrEndOfInput
	})
	assert.ErrorIs(t, err, service.ErrEndOfInput)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err = ReadBatch(ctx, &sync.Mutex{}, func() (service.MessageBatch, service.AckFunc, time.Duration, <-chan struct{}, error) {
		return nil, nil, time.Hour, make(chan struct{}), nil
	})
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
}

func TestReadState(t *testing.T) {
	assert.ErrorIs(t, ReadState(true, nil), service.ErrEndOfInput)
	assert.ErrorIs(t, ReadState(false, nil), service.ErrNotConnected)
}
