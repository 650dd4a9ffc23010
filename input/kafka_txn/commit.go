package kafka_txn

import (
	"strings"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// CommittedLocked receives the output's committed-through offsets.
func (in *Input) CommittedLocked(id string, offset int64) {
	if ps := in.parts[id]; ps != nil && offset > ps.committedThru {
		ps.committedThru = offset
	}
}

// Unclaimed is told by the registry of a partition key the output or the
// assembler uses that no input assigned: starrocks_partition was changed on
// the way (the assembler's partition field or a mapping), so the output's
// committed-through offsets and fences never meet this input's partitions.
// The registry reports each key once.
func (in *Input) Unclaimed(key string, claimed []string) {
	in.m.unmatchedKeys.Incr(1)
	in.log.Warnf("Partition key %q of the metadata contract (%s) matches none of the Kafka partitions the input assigned (%s): "+
		"the output publishes what it committed and takes fences under that key, so the input commits no offsets for it and a rebalance fences nothing "+
		"(a restart re-reads everything; a revoked partition's open transaction is not dropped). "+
		"%s must stay <topic>/<partition> as the input delivers it: leave the txn_assembler's partition field unset and do not change %s in a mapping",
		key, contract.KeyPartition, strings.Join(claimed, ", "), contract.KeyPartition, contract.KeyPartition)
}

// CommitLocked returns the committable offsets of the given partitions (all
// assigned, non-revoking partitions when ids is nil), and records what the
// group took.
func (in *Input) CommitLocked(ids []string) (map[kafka.TopicPartition]int64, func(map[kafka.TopicPartition]int64)) {
	tracking := in.reg.Tracking()
	targets := map[kafka.TopicPartition]*partState{}
	offsets := map[kafka.TopicPartition]int64{}
	add := func(ps *partState) {
		t := ps.commitTarget(tracking)
		if t < 0 || t <= ps.lastCommitted {
			return
		}
		p := kafka.TopicPartition{Topic: ps.topic, Partition: ps.part}
		offsets[p] = t
		targets[p] = ps
	}
	if ids == nil {
		for _, ps := range in.parts {
			if !ps.revoking {
				add(ps)
			}
		}
	} else {
		for _, id := range ids {
			if ps := in.parts[id]; ps != nil {
				add(ps)
			}
		}
	}
	return offsets, func(committed map[kafka.TopicPartition]int64) {
		for p, off := range committed {
			if ps := targets[p]; off > ps.lastCommitted {
				ps.lastCommitted = off
				in.m.committedOffset.Set(off, ps.topic, ps.label)
				in.updateLagLocked(ps)
			}
		}
	}
}
