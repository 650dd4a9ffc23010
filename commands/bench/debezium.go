package bench

import (
	"context"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// debeziumTxnsPerWrite is the source transactions of one produce call of
// the Debezium topics: as many as the envelope topic has per Kafka
// transaction (TxnsPerKafkaTxn in topic.go).
const debeziumTxnsPerWrite = 50

// debeziumNaming names the Debezium topics of the debezium_txn row (the
// workload's default connector, dbserver1).
var debeziumNaming = workload.NewDebeziumSource(workload.DebeziumOptions{})

// debeziumView returns the topic as the debezium_txn row reads it: o.Txns
// source transactions of the same generator (same seed, so the same rows the
// kafka_txn rows load) produced, untimed, as Debezium topics with the
// topic's partitions per table into the same Kafka, with their own model.
// debezium_txn delivers rows only (it assembles the transactions itself), so
// the row's records are its rows. The topics are produced once per loaded
// topic.
func (t *loadedTopic) debeziumView(ctx context.Context, o Options) (*loadedTopic, error) {
	if t.dbz != nil {
		return t.dbz, nil
	}
	if t.Tables > 0 {
		return nil, fmt.Errorf("the debezium_txn row runs on the orders workload only")
	}
	view := *t
	view.model = workload.NewModel()
	gen := workload.NewGenerator(workload.Options{Partitions: int32(t.Partitions), Seed: o.Seed, Events: true})
	src := workload.NewDebeziumSource(workload.DebeziumOptions{Partitions: int32(t.Partitions), Schemas: true})
	if err := workload.CreateDebeziumTopics(ctx, t.brokers, src); err != nil {
		return nil, err
	}
	prod, err := workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: t.brokers}, src, view.model)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	// As many source transactions per produce call as the envelope topic
	// has per Kafka transaction, so that both topics' records share Kafka
	// batches alike.
	part := int32(0)
	batch := make([]workload.DebeziumTxn, 0, debeziumTxnsPerWrite)
	for i := 0; i < o.Txns; i++ {
		batch = append(batch, src.Encode(gen.Next(part)))
		part = (part + 1) % gen.Partitions()
		if len(batch) == cap(batch) || i == o.Txns-1 {
			if err := prod.WriteBatch(ctx, batch); err != nil {
				return nil, fmt.Errorf("pre-producing the Debezium workload: %w", err)
			}
			batch = batch[:0]
		}
	}
	view.sourceTxns = prod.Stats.Txns.Load()
	view.rows = prod.Stats.Events.Load()
	view.records = view.rows
	t.dbz = &view
	return t.dbz, nil
}
