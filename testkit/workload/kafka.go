package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Envelope renders a source transaction in the envelope format that
// txn_assembler reads by default: TXN_BEGIN, a SCHEMA event per schema
// change the transaction carries (the table's definition after it, in
// StarRocks types, in `json`), one DATA event per change (the row as a JSON
// string in `json`), TXN_END.
func Envelope(t Txn) ([][]byte, error) {
	out := make([][]byte, 0, len(t.Schema)+len(t.Changes)+2)
	add := func(ev map[string]any) error {
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encoding envelope event: %w", err)
		}
		out = append(out, b)
		return nil
	}
	if err := add(map[string]any{"partition": t.Partition, "txnId": t.ID, "type": "TXN_BEGIN"}); err != nil {
		return nil, err
	}
	for _, c := range t.Schema {
		if err := add(map[string]any{
			"partition": t.Partition, "txnId": t.ID, "type": "SCHEMA",
			"database": Database, "table": c.Table, "json": c.New.StarRocks(),
		}); err != nil {
			return nil, err
		}
	}
	for _, c := range t.Changes {
		row, err := json.Marshal(c.Row)
		if err != nil {
			return nil, fmt.Errorf("encoding row of %s: %w", c.Table, err)
		}
		if err := add(map[string]any{
			"partition": t.Partition, "txnId": t.ID, "type": "DATA",
			"database": Database, "table": c.Table, "json": string(row),
		}); err != nil {
			return nil, err
		}
	}
	if err := add(map[string]any{"partition": t.Partition, "txnId": t.ID, "type": "TXN_END"}); err != nil {
		return nil, err
	}
	return out, nil
}

// ProducerOptions configure a Producer.
type ProducerOptions struct {
	Brokers []string
	Topic   string
	// TxnsPerKafkaTxn is how many source transactions go into one Kafka
	// producer transaction (default 1).
	TxnsPerKafkaTxn int
	// AbortRatio is the share of Kafka transactions the producer aborts;
	// their source transactions must never reach StarRocks.
	AbortRatio float64
	// Rate bounds source transactions per second over all partitions (0:
	// as fast as possible).
	Rate float64
	// TransactionalID names the producer (default "workload-producer").
	TransactionalID string
	// BatchMaxBytes caps the size of a record batch (0: franz-go's
	// default). A topic created with a max.message.bytes (testkit/kafka's
	// CreateGuardedTopic) refuses larger batches.
	BatchMaxBytes int32
	// Format is how source transactions are written: FormatEnvelope (the
	// default) or FormatMaxwell.
	Format string
	// OnCommit, when set, is called with each source transaction once its
	// Kafka transaction committed and the model recorded it.
	OnCommit func(Txn)
}

// Formats a Producer writes.
const (
	FormatEnvelope = "envelope"
	FormatMaxwell  = "maxwell"
)

// ProducerStats count what a Producer did.
type ProducerStats struct {
	Committed atomic.Int64 // source transactions in committed Kafka transactions
	Aborted   atomic.Int64 // source transactions in aborted Kafka transactions
	Records   atomic.Int64 // records in committed Kafka transactions
}

// Producer writes generated source transactions to Kafka inside Kafka
// transactions, and records the committed ones in a Model.
type Producer struct {
	opts  ProducerOptions
	gen   *Generator
	model *Model
	cl    *kgo.Client
	rng   *rand.Rand
	xid   int64
	Stats ProducerStats
}

// NewProducer connects a transactional producer.
func NewProducer(opts ProducerOptions, gen *Generator, model *Model) (*Producer, error) {
	if opts.TxnsPerKafkaTxn <= 0 {
		opts.TxnsPerKafkaTxn = 1
	}
	if opts.TransactionalID == "" {
		opts.TransactionalID = "workload-producer"
	}
	switch opts.Format {
	case "":
		opts.Format = FormatEnvelope
	case FormatEnvelope, FormatMaxwell:
	default:
		return nil, fmt.Errorf("producer format %q is not %s or %s", opts.Format, FormatEnvelope, FormatMaxwell)
	}
	kopts := []kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.TransactionalID(opts.TransactionalID),
		kgo.DefaultProduceTopic(opts.Topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(30 * time.Second),
	}
	if opts.BatchMaxBytes > 0 {
		kopts = append(kopts, kgo.ProducerBatchMaxBytes(opts.BatchMaxBytes))
	}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("creating producer: %w", err)
	}
	return &Producer{opts: opts, gen: gen, model: model, cl: cl, rng: rand.New(rand.NewPCG(gen.opts.Seed+1, 7))}, nil
}

// Close closes the Kafka client.
func (p *Producer) Close() { p.cl.Close() }

// Produce writes source transactions, round-robin over partitions, until n
// have been committed (n <= 0: until ctx ends). It returns nil when ctx ends.
func (p *Producer) Produce(ctx context.Context, n int) error {
	var interval time.Duration
	if p.opts.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(p.opts.TxnsPerKafkaTxn) / p.opts.Rate)
	}
	next := time.Now()
	part := int32(0)
	for n <= 0 || int(p.Stats.Committed.Load()) < n {
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
		batch := make([]Txn, 0, p.opts.TxnsPerKafkaTxn)
		for i := 0; i < p.opts.TxnsPerKafkaTxn; i++ {
			batch = append(batch, p.gen.Next(part))
			part = (part + 1) % p.gen.Partitions()
		}
		abort := p.rng.Float64() < p.opts.AbortRatio
		for _, t := range batch {
			// A schema change is the source's DDL, never rolled back: the
			// Kafka transaction that carries it commits, so the partition's
			// stream always holds it before the rows written under it.
			abort = abort && len(t.Schema) == 0
		}
		if err := p.write(ctx, batch, abort); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	return nil
}

func (p *Producer) write(ctx context.Context, batch []Txn, abort bool) error {
	if err := p.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("beginning producer transaction: %w", err)
	}
	var recs []*kgo.Record
	for _, t := range batch {
		var evs [][]byte
		var err error
		if p.opts.Format == FormatMaxwell {
			p.xid++
			evs, err = Maxwell(t, p.xid)
		} else {
			evs, err = Envelope(t)
		}
		if err != nil {
			return err
		}
		for _, ev := range evs {
			recs = append(recs, &kgo.Record{Partition: t.Partition, Key: []byte(t.ID), Value: ev})
		}
	}
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		_ = p.cl.AbortBufferedRecords(context.Background())
		_ = p.cl.EndTransaction(context.Background(), kgo.TryAbort)
		return fmt.Errorf("producing source transactions: %w", err)
	}
	end := kgo.TryCommit
	if abort {
		end = kgo.TryAbort
	}
	// Not cancelled with ctx: a commit interrupted after it reached the
	// broker would be counted aborted here yet be visible to consumers, and
	// the model would lack it (the demo stops its producer by cancelling).
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.cl.EndTransaction(ectx, end); err != nil {
		_ = p.cl.EndTransaction(context.Background(), kgo.TryAbort)
		// The outcome of a failed commit is unknown to us only if the
		// broker did not answer; kgo aborts on retry, so count it aborted.
		p.Stats.Aborted.Add(int64(len(batch)))
		return fmt.Errorf("ending producer transaction: %w", err)
	}
	if abort {
		p.Stats.Aborted.Add(int64(len(batch)))
		return nil
	}
	for _, t := range batch {
		p.model.Apply(t)
		if p.opts.OnCommit != nil {
			p.opts.OnCommit(t)
		}
	}
	p.Stats.Committed.Add(int64(len(batch)))
	p.Stats.Records.Add(int64(len(recs)))
	return nil
}
