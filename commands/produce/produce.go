package produce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Options configure a run.
type Options struct {
	Brokers []string
	Format  string
	// Topic for the envelope and Maxwell formats (default "cdc" and
	// "maxwell", the shipped configs' defaults); it is created with
	// Partitions partitions when missing, else its own count is used.
	Topic string
	// Partitions of a topic produce creates (default 4); for Debezium, of
	// every data topic (default 3).
	Partitions int32
	// Prefix is the Debezium connector's topic.prefix (default dbserver1).
	Prefix string
	// Txns is how many source transactions to write (default 100).
	Txns int
	// Rate bounds source transactions per second (0: as fast as it goes).
	Rate float64
	Seed uint64
}

// Result is what a run wrote.
type Result struct {
	Format     string
	Topics     []string // the data topics written
	Partitions int32    // of the topic (envelope, Maxwell) or of each data topic (Debezium)
	Txns       int64
	Records    int64
	// Model is what the tables hold once every written transaction is
	// loaded into empty tables.
	Model *workload.Model
	// TransactionTopic is the Debezium transaction topic.
	TransactionTopic string
}

func (o *Options) defaults() {
	if o.Format == "" {
		o.Format = FormatEnvelope
	}
	if o.Topic == "" {
		o.Topic = map[string]string{FormatEnvelope: "cdc", FormatMaxwell: "maxwell"}[o.Format]
	}
	if o.Txns <= 0 {
		o.Txns = 100
	}
	if o.Prefix == "" {
		o.Prefix = "dbserver1"
	}
}

// Run writes the source transactions and returns what it wrote.
func Run(ctx context.Context, o Options) (*Result, error) {
	o.defaults()
	if len(o.Brokers) == 0 {
		return nil, errors.New("no broker to write to: give --brokers host:port")
	}
	switch o.Format {
	case FormatEnvelope, FormatMaxwell:
		return runPartitioned(ctx, o)
	case FormatDebezium:
		return runDebezium(ctx, o)
	}
	return nil, fmt.Errorf("--format %q is not one of %s, %s, %s", o.Format, FormatEnvelope, FormatMaxwell, FormatDebezium)
}

// topicPartitions returns the partition count of topic, creating it with
// create partitions when it does not exist.
func topicPartitions(ctx context.Context, brokers []string, topic string, create int32) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return 0, fmt.Errorf("connecting to %v: %w", brokers, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reading topic %s from %v: %w", topic, brokers, err)
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		return int32(len(d.Partitions)), nil
	}
	if create <= 0 {
		create = 4
	}
	resp, err := adm.CreateTopic(ctx, create, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %s: %w", topic, err)
	}
	return create, nil
}

// runPartitioned writes envelope or Maxwell transactions, one Kafka
// transaction each, every source transaction inside one partition.
func runPartitioned(ctx context.Context, o Options) (*Result, error) {
	parts, err := topicPartitions(ctx, o.Brokers, o.Topic, o.Partitions)
	if err != nil {
		return nil, err
	}
	sample, err := NewSample(o.Format, parts, o.Seed)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(o.Brokers...), kgo.TransactionalID("benthos-starrocks-produce"),
		kgo.DefaultProduceTopic(o.Topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connecting a producer to %v: %w", o.Brokers, err)
	}
	defer cl.Close()
	res := &Result{Format: o.Format, Topics: []string{o.Topic}, Partitions: parts, Model: workload.NewModel()}
	pace := pacer(o.Rate)
	for i := 0; i < o.Txns; i++ {
		if err := pace(ctx); err != nil {
			return res, err
		}
		t, evs, err := sample.Next()
		if err != nil {
			return res, err
		}
		if err := cl.BeginTransaction(); err != nil {
			return res, fmt.Errorf("beginning a Kafka transaction: %w", err)
		}
		recs := make([]*kgo.Record, len(evs))
		for j, ev := range evs {
			recs[j] = &kgo.Record{Partition: t.Partition, Key: []byte(t.ID), Value: ev}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			_ = cl.AbortBufferedRecords(context.Background())
			_ = cl.EndTransaction(context.Background(), kgo.TryAbort)
			return res, fmt.Errorf("writing source transaction %s to %s: %w", t.ID, o.Topic, err)
		}
		// Not cancelled with ctx: a commit that reached the broker is
		// visible, and must be in the model.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		err = cl.EndTransaction(ectx, kgo.TryCommit)
		cancel()
		if err != nil {
			return res, fmt.Errorf("committing the Kafka transaction of %s: %w", t.ID, err)
		}
		res.Model.Apply(t)
		res.Txns++
		res.Records += int64(len(recs))
	}
	return res, nil
}

// runDebezium writes a Debezium connector's topics: one per table and the
// transaction topic.
func runDebezium(ctx context.Context, o Options) (*Result, error) {
	src := workload.NewDebeziumSource(workload.DebeziumOptions{Prefix: o.Prefix, Partitions: o.Partitions, Schemas: true, Seed: o.Seed})
	if err := workload.CreateDebeziumTopics(ctx, o.Brokers, src); err != nil {
		return nil, err
	}
	res := &Result{Format: o.Format, Topics: src.DataTopics(), Partitions: src.Partitions(), Model: workload.NewModel(),
		TransactionTopic: src.TransactionTopic()}
	p, err := workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: o.Brokers, Rate: o.Rate}, src, res.Model)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	err = p.Produce(ctx, o.Txns)
	res.Txns, res.Records = p.Stats.Txns.Load(), p.Stats.Records.Load()
	return res, err
}

// pacer returns a wait that holds successive calls rate per second apart.
func pacer(rate float64) func(context.Context) error {
	if rate <= 0 {
		return func(ctx context.Context) error { return ctx.Err() }
	}
	interval := time.Duration(float64(time.Second) / rate)
	next := time.Now()
	return func(ctx context.Context) error {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		next = next.Add(interval)
		return ctx.Err()
	}
}

// splitBrokers reads a --brokers value: comma-separated addresses.
func splitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}
