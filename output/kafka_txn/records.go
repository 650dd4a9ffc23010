package kafka_txn

// Home of G70 (ARCHITECTURE.md §11.5): the contract travels with the record as headers, its
// typed keys as strings. Main test: TestTypedContractBecomesStringHeaders.

import (
	"fmt"
	"sort"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// records converts a batch into records: topic, key and partition
// interpolated per message, the body as the value, and the metadata that
// matches the filter as headers (sorted by key, so the same message gets the
// same headers in the same order), the metadata contract's typed keys
// materialized as strings.
func (o *Output) records(batch service.MessageBatch) ([]*kgo.Record, error) {
	recs := make([]*kgo.Record, len(batch))
	for i, msg := range batch {
		topic, err := batch.TryInterpolatedString(i, o.conf.topic)
		if err != nil {
			return nil, fmt.Errorf("message %d: evaluating topic: %w", i, err)
		}
		if topic == "" {
			return nil, fmt.Errorf("message %d: topic gave an empty topic name", i)
		}
		r := &kgo.Record{Topic: topic}
		if o.conf.key != nil {
			if r.Key, err = batch.TryInterpolatedBytes(i, o.conf.key); err != nil {
				return nil, fmt.Errorf("message %d: evaluating key: %w", i, err)
			}
		}
		if o.conf.partition != nil {
			s, err := batch.TryInterpolatedString(i, o.conf.partition)
			if err != nil {
				return nil, fmt.Errorf("message %d: evaluating partition: %w", i, err)
			}
			if r.Partition, err = partitionOf(s); err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
		}
		if r.Value, err = msg.AsBytes(); err != nil {
			return nil, fmt.Errorf("message %d: reading its body: %w", i, err)
		}
		if o.conf.metadata != nil {
			// The contract's typed keys become headers as the strings a
			// hand-written mapping would set (contract.Materialize).
			_ = o.conf.metadata.Walk(contract.Materialized(msg), func(k, v string) error {
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
				return nil
			})
			sort.Slice(r.Headers, func(a, b int) bool { return r.Headers[a].Key < r.Headers[b].Key })
		}
		recs[i] = r
	}
	return recs, nil
}
