package bench

import (
	"context"
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/internal/workload"
)

// debeziumNaming names the Debezium topics of the debezium_txn row (the
// workload's default connector, dbserver1).
var debeziumNaming = workload.NewDebeziumSource(workload.DebeziumOptions{})

// produceDebezium pre-produces o.Txns of gen's source transactions — the
// rows the kafka_txn rows load — as Debezium topics with c.Partitions
// partitions per table. debezium_txn delivers rows only (it assembles the
// transactions itself), so the row's records are its rows.
func produceDebezium(ctx context.Context, brokers []string, c Config, o Options, gen *workload.Generator, model *workload.Model, res *Result) error {
	src := workload.NewDebeziumSource(workload.DebeziumOptions{Partitions: int32(c.Partitions), Schemas: true})
	if err := workload.CreateDebeziumTopics(ctx, brokers, src); err != nil {
		return err
	}
	prod, err := workload.NewDebeziumProducer(workload.DebeziumProducerOptions{Brokers: brokers}, src, model)
	if err != nil {
		return err
	}
	defer prod.Close()
	part := int32(0)
	for i := 0; i < o.Txns; i++ {
		if err := prod.Write(ctx, src.Encode(gen.Next(part))); err != nil {
			return fmt.Errorf("pre-producing the Debezium workload: %w", err)
		}
		part = (part + 1) % gen.Partitions()
	}
	res.SourceTxns = prod.Stats.Txns.Load()
	res.Rows = prod.Stats.Events.Load()
	res.Records = res.Rows
	return nil
}
