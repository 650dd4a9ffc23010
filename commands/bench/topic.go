package bench

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/input/kafka_txn"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// Schema is examples/schema.sql: the orders, order_items and order_events
// tables the orders workload loads. The binary passes its embedded copy to
// Command; the tests read the file.
var Schema string

const topicName = "cdc"

// consumerFetchMaxBytes is the response size the topic's consumers fetch
// with: kafka_txn's (kafka_txn.FetchMaxBytes, at the default
// fetch_max_partition_bytes), which runFranz and LastEndOffsets set too. The
// producer's batches are capped by it (testkit/kafka's GuardedBatchBytes),
// so that the in-process Kafka's fetch guard keeps the responses within it
// at every partition count. A variable for the test that lowers it.
var consumerFetchMaxBytes int32 = kafka_txn.FetchMaxBytes

// loadedTopic is a topic pre-loaded into its own in-process Kafka, and what
// the producer committed to it.
type loadedTopic struct {
	Topic
	cluster *kafka.Cluster
	brokers []string
	model   *workload.Model
	// sourceTxns, records and rows the producer committed.
	sourceTxns, records, rows int64
	// schema is the DDL the loaders' emulators start with.
	schema string
	// dbz is the same workload as Debezium topics in the same Kafka, once
	// the debezium_txn row produced them (debezium.go).
	dbz *loadedTopic
}

func (t *loadedTopic) close() { t.cluster.Close() }

// loadTopic starts a Kafka with t's partitions and produces o.Txns committed
// source transactions of the workload into it (and aborted ones at
// o.AbortRatio), before any row reads it, so that no producer limits a row.
//
// The Kafka is the test kit's (testkit/kafka), whose fetch guard keeps
// kfake from leaving out the aborted transactions of the partition a fetch
// response ends in when the response reaches its byte limit (which at 256
// partitions served read_committed consumers a few hundred records of
// aborted transactions). The producer's batches are capped so that the
// guard keeps the consumers' fetches of franz-go's default size within it.
func loadTopic(ctx context.Context, o Options, t Topic) (*loadedTopic, error) {
	maxBatch, err := kafka.GuardedBatchBytes(int32(t.Partitions), consumerFetchMaxBytes)
	if err != nil {
		return nil, err
	}
	cluster, err := kafka.Start()
	if err != nil {
		return nil, err
	}
	if err := cluster.CreateGuardedTopic(topicName, int32(t.Partitions), maxBatch); err != nil {
		cluster.Close()
		return nil, fmt.Errorf("starting the in-process Kafka: %w", err)
	}
	lt := &loadedTopic{Topic: t, cluster: cluster, brokers: cluster.ListenAddrs(), model: workload.NewModel(), schema: Schema}
	if t.Tables > 0 {
		lt.schema = workload.WideSchema(t.Tables)
	}
	gen := workload.NewGenerator(workload.Options{Partitions: int32(t.Partitions), Seed: o.Seed, Events: true, Tables: t.Tables})
	prod, err := workload.NewProducer(workload.ProducerOptions{
		Brokers: lt.brokers, Topic: topicName, AbortRatio: o.AbortRatio, TxnsPerKafkaTxn: 50,
		TransactionalID: "bench-producer", BatchMaxBytes: maxBatch,
	}, gen, lt.model)
	if err != nil {
		cluster.Close()
		return nil, err
	}
	err = prod.Produce(ctx, o.Txns)
	prod.Close()
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		cluster.Close()
		return nil, fmt.Errorf("pre-producing the workload: %w", err)
	}
	lt.sourceTxns = prod.Stats.Committed.Load()
	lt.records = prod.Stats.Records.Load()
	// Every committed source transaction is a BEGIN, its changes and an END
	// (workload.Envelope).
	lt.rows = lt.records - 2*lt.sourceTxns
	return lt, nil
}

// LastEndOffsets reads the topic from the start with read_committed until it
// has seen records records, and returns the offset of the last TXN_END
// event of every partition that has one, keyed like starrocks_partition
// ("<topic>/<partition>"). That is what the progress table of an
// exactly_once run that loaded everything must hold as committed_offset.
func LastEndOffsets(ctx context.Context, brokers []string, topic string, records int64) (map[string]int64, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(consumerFetchMaxBytes),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the Kafka client: %w", err)
	}
	defer cl.Close()
	ends := map[string]int64{}
	var seen int64
	var decodeErr error
	for seen < records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%d of %d records read: %w", seen, records, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("fetching %s/%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			var ev struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				if decodeErr == nil {
					decodeErr = fmt.Errorf("decoding the record at %s/%d offset %d: %w", r.Topic, r.Partition, r.Offset, err)
				}
				return
			}
			if ev.Type != "TXN_END" {
				return
			}
			key := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			if cur, ok := ends[key]; !ok || r.Offset > cur {
				ends[key] = r.Offset
			}
		})
		if decodeErr != nil {
			return nil, decodeErr
		}
	}
	return ends, nil
}
