// Package produce is the `produce` subcommand: it writes sample source
// transactions (the orders / order_items / order_events traffic of
// testkit/workload, for the tables of examples/schema.sql) to a Kafka in the
// format a shipped config reads — the envelope, Maxwell's rows or a Debezium
// connector's topics — and says what the tables hold once they are loaded.
// With the `kafka` command and the emulator it makes every shipped config
// runnable on one machine; against any Kafka it is a smoke test of a
// pipeline.
package produce

import (
	"fmt"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The formats produce writes.
const (
	FormatEnvelope = "envelope"
	FormatMaxwell  = "maxwell"
	FormatDebezium = "debezium"
)

// Sample yields the source transactions of one produce run, encoded in an
// envelope or Maxwell format: the same ones, in the same order, for the same
// partitions and seed, so that what a run wrote can be known without
// reading it back.
type Sample struct {
	format string
	gen    *workload.Generator
	n      int64
}

// NewSample returns the sample of format (FormatEnvelope or FormatMaxwell)
// over partitions partitions.
func NewSample(format string, partitions int32, seed uint64) (*Sample, error) {
	switch format {
	case FormatEnvelope, FormatMaxwell:
	default:
		return nil, fmt.Errorf("format %q is not one of %s, %s", format, FormatEnvelope, FormatMaxwell)
	}
	if partitions < 1 {
		return nil, fmt.Errorf("a sample needs at least one partition, not %d", partitions)
	}
	return &Sample{format: format, gen: workload.NewGenerator(workload.Options{Partitions: partitions, Seed: seed, Events: true})}, nil
}

// Next returns the next source transaction (partitions in turn) and its
// records, in order; every record goes to the transaction's partition.
func (s *Sample) Next() (workload.Txn, [][]byte, error) {
	t := s.gen.Next(int32(s.n % int64(s.gen.Partitions())))
	s.n++
	if s.format == FormatMaxwell {
		evs, err := workload.Maxwell(t, 1000+s.n)
		return t, evs, err
	}
	evs, err := workload.Envelope(t)
	return t, evs, err
}

// Model returns what loading the first n transactions of a sample leaves in
// empty tables.
func Model(format string, partitions int32, seed uint64, n int) (*workload.Model, error) {
	s, err := NewSample(format, partitions, seed)
	if err != nil {
		return nil, err
	}
	m := workload.NewModel()
	for i := 0; i < n; i++ {
		t, _, err := s.Next()
		if err != nil {
			return nil, err
		}
		m.Apply(t)
	}
	return m, nil
}
