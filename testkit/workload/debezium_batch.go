package workload

import "context"

// WriteBatch writes encoded source transactions (DebeziumSource.Encode) as
// Write does one by one, their records in one produce call: each
// partition's records then share Kafka batches, as those of a connector
// catching up on a backlog do (its producer fills a batch while the one
// before is in flight), where a call per transaction makes batches of one
// or two records. Each partition keeps the transactions' order.
func (p *DebeziumProducer) WriteBatch(ctx context.Context, ts []DebeziumTxn) error {
	var recs []Record
	for _, t := range ts {
		if err := p.createTopics(ctx, t.NewTopics); err != nil {
			return err
		}
		recs = append(recs, t.Records...)
	}
	if err := p.write(ctx, recs); err != nil {
		return err
	}
	for _, t := range ts {
		p.written(t)
	}
	return nil
}
