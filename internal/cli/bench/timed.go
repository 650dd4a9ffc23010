package bench

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// timedInputName is the wrapper input every configuration reads through.
const timedInputName = "bench_timed"

// meter is what the bench_timed input records about one run: how many Kafka
// records the pipeline read and how many the output acknowledged, when, and
// the read → acknowledgement latency of each record.
type meter struct {
	want    int64 // records the run must deliver; 0 = unknown yet
	read    atomic.Int64
	batches atomic.Int64
	// data counts records whose acknowledgement reported success.
	acked  atomic.Int64
	nacked atomic.Int64

	mu        sync.Mutex
	firstRead time.Time
	lastAck   time.Time
	latencies []latencySample
	done      chan struct{}
	doneOnce  sync.Once
}

// latencySample is one acknowledged input batch: its read → ack time and
// the number of records it carried (the quantiles weight by records).
type latencySample struct {
	d time.Duration
	n int
}

func newMeter(want int64) *meter {
	return &meter{want: want, done: make(chan struct{})}
}

func (m *meter) onRead(n int, now time.Time) {
	m.mu.Lock()
	if m.firstRead.IsZero() {
		m.firstRead = now
	}
	m.mu.Unlock()
	m.read.Add(int64(n))
	m.batches.Add(1)
}

func (m *meter) onAck(n int, readAt time.Time, err error) {
	now := time.Now()
	if err != nil {
		m.nacked.Add(int64(n))
		return
	}
	m.mu.Lock()
	m.latencies = append(m.latencies, latencySample{d: now.Sub(readAt), n: n})
	if now.After(m.lastAck) {
		m.lastAck = now
	}
	m.mu.Unlock()
	if total := m.acked.Add(int64(n)); m.want > 0 && total >= m.want {
		m.doneOnce.Do(func() { close(m.done) })
	}
}

// window returns the first read and the last acknowledgement.
func (m *meter) window() (time.Time, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.firstRead, m.lastAck
}

// quantile returns the record-weighted q-quantile of read → ack latency.
func (m *meter) quantile(q float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return weightedQuantile(m.latencies, q)
}

// registerTimedInput adds the bench_timed input to env. It wraps another
// input (kafka_txn), counts what it delivers and when the output acknowledges
// it, and stamps each message's kafka_timestamp_ms with the time it was read:
// the Kafka record timestamps of a pre-produced backlog measure how long the
// backlog waited, not the pipeline, and starrocks_txn measures its visibility
// latency from that metadata key.
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
	now := time.Now()
	ms := strconv.FormatInt(now.UnixMilli(), 10)
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
