package bench

import (
	"context"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

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
	part := int32(0)
	for i := 0; i < o.Txns; i++ {
		if err := prod.Write(ctx, src.Encode(gen.Next(part))); err != nil {
			return nil, fmt.Errorf("pre-producing the Debezium workload: %w", err)
		}
		part = (part + 1) % gen.Partitions()
	}
	view.sourceTxns = prod.Stats.Txns.Load()
	view.rows = prod.Stats.Events.Load()
	view.records = view.rows
	t.dbz = &view
	return t.dbz, nil
}
