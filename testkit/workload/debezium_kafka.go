package workload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CreateDebeziumTopics creates every topic the source writes (the data
// topics, the unconsumed audit_log topic and the one-partition transaction
// topic); existing topics are left alone.
func CreateDebeziumTopics(ctx context.Context, brokers []string, src *DebeziumSource) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return fmt.Errorf("creating admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics := src.AllTopics()
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		resp, err := adm.CreateTopic(ctx, topics[t], 1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", t, err)
		}
	}
	return nil
}

// DebeziumProducerOptions configure a DebeziumProducer.
type DebeziumProducerOptions struct {
	Brokers []string
	// Rate bounds source transactions per second (0: as fast as possible).
	Rate float64
	// Lag, when set, delays the records of a partition by its lag (each
	// partition's order kept): partitions arrive unevenly, ENDs before
	// their events, as when a connector's producer batches per broker.
	Lag func(topic string, partition int32) time.Duration
	// OnWrite, when set, is called with each source transaction once its
	// records were written (lagged ones handed to the lag) and the model
	// recorded it, and with the snapshot's rows as one (ID "snapshot").
	OnWrite func(DebeziumTxn)
}

// DebeziumStats count what a DebeziumProducer wrote.
type DebeziumStats struct {
	Txns         atomic.Int64 // source transactions
	Events       atomic.Int64 // data change events of every collection (re-sends not counted)
	Records      atomic.Int64 // Kafka records, re-sends and tombstones included
	SnapshotRows atomic.Int64
	Largest      atomic.Int64 // events of the largest source transaction
	Resent       atomic.Int64 // records re-sent after a "connector restart"
}

// DebeziumProducer writes Debezium traffic as a Kafka Connect source task
// does (an idempotent, non-transactional producer), and records each written
// source transaction in a Model.
type DebeziumProducer struct {
	opts  DebeziumProducerOptions
	src   *DebeziumSource
	model *Model
	cl    *kgo.Client
	Stats DebeziumStats

	lagMu   sync.Mutex
	lagQ    []lagged
	lagWake chan struct{}
	lagDone chan struct{}
	lagErr  error
}

type lagged struct {
	due time.Time
	rec *kgo.Record
}

// NewDebeziumProducer connects a producer.
func NewDebeziumProducer(opts DebeziumProducerOptions, src *DebeziumSource, model *Model) (*DebeziumProducer, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(opts.Brokers...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return nil, fmt.Errorf("creating producer: %w", err)
	}
	p := &DebeziumProducer{opts: opts, src: src, model: model, cl: cl}
	if opts.Lag != nil {
		p.lagWake, p.lagDone = make(chan struct{}, 1), make(chan struct{})
		go p.lagLoop()
	}
	return p, nil
}

// Close writes what the lag still holds and closes the Kafka client.
func (p *DebeziumProducer) Close() {
	if p.lagDone != nil {
		close(p.lagDone)
		p.flushLagged(time.Time{})
	}
	_ = p.cl.Flush(context.Background())
	p.cl.Close()
}

// lagLoop writes lagged records once due, in the order they were queued:
// every record of one partition has the same lag, so each partition keeps
// its order.
func (p *DebeziumProducer) lagLoop() {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.lagDone:
			return
		case <-t.C:
		}
		p.flushLagged(time.Now())
	}
}

func (p *DebeziumProducer) flushLagged(now time.Time) {
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	keep := p.lagQ[:0]
	for _, l := range p.lagQ {
		if now.IsZero() || !l.due.After(now) {
			p.cl.Produce(context.Background(), l.rec, func(_ *kgo.Record, err error) {
				if err != nil {
					p.lagMu.Lock()
					p.lagErr = err
					p.lagMu.Unlock()
				}
			})
			continue
		}
		keep = append(keep, l)
	}
	p.lagQ = keep
}

// Lagging reports the records the lag still holds.
func (p *DebeziumProducer) Lagging() int {
	p.lagMu.Lock()
	defer p.lagMu.Unlock()
	return len(p.lagQ)
}

func (p *DebeziumProducer) write(ctx context.Context, recs []Record) error {
	krs := make([]*kgo.Record, 0, len(recs))
	now := time.Now()
	for _, r := range recs {
		kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
		if p.opts.Lag != nil {
			if d := p.opts.Lag(r.Topic, r.Partition); d > 0 {
				p.lagMu.Lock()
				if p.lagErr != nil {
					err := p.lagErr
					p.lagMu.Unlock()
					return fmt.Errorf("producing lagged Debezium records: %w", err)
				}
				p.lagQ = append(p.lagQ, lagged{due: now.Add(d), rec: kr})
				p.lagMu.Unlock()
				continue
			}
		}
		krs = append(krs, kr)
	}
	// The records of one source transaction are written before the next
	// one's: per partition, Kafka keeps Debezium's order.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.cl.ProduceSync(wctx, krs...).FirstErr(); err != nil {
		return fmt.Errorf("producing Debezium records: %w", err)
	}
	p.Stats.Records.Add(int64(len(recs)))
	return nil
}

// Snapshot writes the initial snapshot.
func (p *DebeziumProducer) Snapshot(ctx context.Context) error {
	t, recs := p.src.Snapshot()
	if len(recs) == 0 {
		return nil
	}
	if err := p.write(ctx, recs); err != nil {
		return err
	}
	p.model.Apply(t)
	if p.opts.OnWrite != nil {
		p.opts.OnWrite(DebeziumTxn{Txn: t, Records: recs})
	}
	p.Stats.SnapshotRows.Add(int64(len(recs)))
	return nil
}

// createTopics creates the topics a transaction writes first, as Kafka
// Connect does for a new table's topic (its partitions as the source's
// other data topics).
func (p *DebeziumProducer) createTopics(ctx context.Context, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(p.cl)
	for _, t := range topics {
		resp, err := adm.CreateTopic(cctx, p.src.Partitions(), 1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", t, err)
		}
	}
	return nil
}

// Write writes one encoded source transaction (DebeziumSource.Encode) and
// records it.
func (p *DebeziumProducer) Write(ctx context.Context, t DebeziumTxn) error {
	if err := p.createTopics(ctx, t.NewTopics); err != nil {
		return err
	}
	if err := p.write(ctx, t.Records); err != nil {
		return err
	}
	p.written(t)
	return nil
}

// written records a source transaction whose records Kafka took: the model,
// the OnWrite hook, the statistics.
func (p *DebeziumProducer) written(t DebeziumTxn) {
	p.model.Apply(t.Txn)
	if p.opts.OnWrite != nil {
		p.opts.OnWrite(t)
	}
	p.Stats.Txns.Add(1)
	p.Stats.Events.Add(int64(t.Events))
	for {
		cur := p.Stats.Largest.Load()
		if int64(t.Events) <= cur || p.Stats.Largest.CompareAndSwap(cur, int64(t.Events)) {
			return
		}
	}
}

// Produce writes source transactions until n are written (n <= 0: until ctx
// ends); it returns nil when ctx ends.
func (p *DebeziumProducer) Produce(ctx context.Context, n int) error {
	var interval time.Duration
	if p.opts.Rate > 0 {
		interval = time.Duration(float64(time.Second) / p.opts.Rate)
	}
	next := time.Now()
	for n <= 0 || int(p.Stats.Txns.Load()) < n {
		if ctx.Err() != nil {
			return nil
		}
		if interval > 0 {
			if d := time.Until(next); d > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(d):
				}
			}
			next = next.Add(interval)
		}
		t := p.src.Next()
		if err := p.createTopics(ctx, t.NewTopics); err != nil {
			return err
		}
		if err := p.write(ctx, t.Records); err != nil {
			return err
		}
		p.model.Apply(t.Txn)
		if p.opts.OnWrite != nil {
			p.opts.OnWrite(t)
		}
		p.Stats.Txns.Add(1)
		p.Stats.Events.Add(int64(t.Events))
		p.Stats.Resent.Add(int64(len(t.Records) - t.Events - 2 - countTombstones(t)))
		for {
			cur := p.Stats.Largest.Load()
			if int64(t.Events) <= cur || p.Stats.Largest.CompareAndSwap(cur, int64(t.Events)) {
				break
			}
		}
	}
	return nil
}

func countTombstones(t DebeziumTxn) int {
	n := 0
	for _, c := range t.Txn.Changes {
		if c.Delete {
			n++
		}
	}
	return n
}
