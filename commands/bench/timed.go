package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// Inputs the bench registers in each row's environment.
const (
	// timedInputName wraps the input every configuration reads through.
	timedInputName = "bench_timed"
	// prebuiltInputName serves a contract stream built before the row ran.
	prebuiltInputName = "bench_prebuilt"
)

// registerTimedInput adds the bench_timed input to env. It wraps another
// input, counts what it delivers and when the output acknowledges it, and
// stamps each message's kafka_timestamp_ms with the time it was read: the
// Kafka record timestamps of a pre-produced backlog measure how long the
// backlog waited, not the pipeline, and starrocks_txn measures its
// visibility latency from that metadata key.
func registerTimedInput(env *service.Environment, m *meter) error {
	spec := service.NewConfigSpec().
		Summary("Benchmark wrapper: reads a child input, counts records and acknowledgements and stamps the read time.").
		Field(service.NewInputField("input").Description("The input to measure."))
	return env.RegisterBatchInput(timedInputName, spec, func(conf *service.ParsedConfig, _ *service.Resources) (service.BatchInput, error) {
		child, err := conf.FieldInput("input")
		if err != nil {
			return nil, err
		}
		return &timedInput{child: child, m: m}, nil
	})
}

type timedInput struct {
	child *service.OwnedInput
	m     *meter
	// start and delivered pace the input when m.rate is set.
	start     time.Time
	delivered int64
}

func (t *timedInput) Connect(context.Context) error { return nil }

func (t *timedInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	batch, ack, err := t.child.ReadBatch(ctx)
	if err != nil {
		if errors.Is(err, service.ErrEndOfInput) {
			return nil, nil, service.ErrEndOfInput
		}
		return nil, nil, err
	}
	// now is when the batch counts as read: the first one starts the
	// pacer's schedule.
	now := time.Now()
	if t.m.rate > 0 {
		// Paced: the batch waits (before it counts as read) until the
		// records delivered before it fit the rate.
		if t.start.IsZero() {
			t.start = now
		}
		due := t.start.Add(time.Duration(float64(t.delivered) / float64(t.m.rate) * float64(time.Second)))
		if d := due.Sub(now); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				_ = ack(ctx, ctx.Err())
				return nil, nil, ctx.Err()
			}
			held := now
			now = time.Now()
			t.m.paceWait.Add(int64(now.Sub(held)))
		}
		t.delivered += int64(len(batch))
	}
	// Boxed once: the wrapper should cost the rows as little as it can.
	var ms any = strconv.FormatInt(now.UnixMilli(), 10)
	for _, msg := range batch {
		msg.MetaSetMut("kafka_timestamp_ms", ms)
	}
	n := len(batch)
	t.m.onRead(n, now)
	return batch, func(ctx context.Context, err error) error {
		t.m.onAck(n, now, err)
		return ack(ctx, err)
	}, nil
}

func (t *timedInput) Close(ctx context.Context) error { return t.child.Close(ctx) }

// prebuilt is a contract stream made before a row ran: the batches
// txn_assembler emitted for the topic, in emission order.
type prebuilt struct {
	mu      sync.Mutex
	batches []service.MessageBatch
	msgs    int64
}

// registerPrebuiltInput adds the bench_prebuilt input to env: it hands out
// the batches of p once each, in order, and then waits for the end of the
// stream, as a Kafka input with nothing more to read does.
func registerPrebuiltInput(env *service.Environment, p *prebuilt) error {
	spec := service.NewConfigSpec().Summary("Benchmark input: a contract stream built in memory before the run.")
	return env.RegisterBatchInput(prebuiltInputName, spec, func(*service.ParsedConfig, *service.Resources) (service.BatchInput, error) {
		return &prebuiltInput{p: p}, nil
	})
}

type prebuiltInput struct{ p *prebuilt }

func (in *prebuiltInput) Connect(context.Context) error { return nil }

func (in *prebuiltInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	in.p.mu.Lock()
	if len(in.p.batches) > 0 {
		b := in.p.batches[0]
		in.p.batches[0] = nil
		in.p.batches = in.p.batches[1:]
		in.p.mu.Unlock()
		return b, func(context.Context, error) error { return nil }, nil
	}
	in.p.mu.Unlock()
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func (in *prebuiltInput) Close(context.Context) error { return nil }
