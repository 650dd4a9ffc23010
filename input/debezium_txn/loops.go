// This file holds what the commit loop commits (internal/kafka/consumer
// runs it every commit_period) and the report of what holds the stream.

package debezium_txn

import (
	"context"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// CommitLocked returns the floors that moved (ARCHITECTURE.md §13.6), all
// of them whatever ids: the floors are the assignment's, and records what
// the group took.
func (in *Input) CommitLocked([]string) (map[kafka.TopicPartition]int64, func(map[kafka.TopicPartition]int64)) {
	a, gen := in.asm, in.gen
	if a == nil || in.partial != nil {
		return nil, nil
	}
	data, txnFloor := a.floors()
	offsets := map[kafka.TopicPartition]int64{}
	for p, f := range data {
		if cur, ok := in.committed[p]; !ok || f > cur {
			offsets[kafka.TopicPartition{Topic: p.topic, Partition: p.part}] = f
		}
	}
	txnTP := tp{in.conf.transactionTopic, 0}
	if cur, ok := in.committed[txnTP]; txnFloor >= 0 && (!ok || txnFloor > cur) {
		offsets[kafka.TopicPartition{Topic: txnTP.topic, Partition: txnTP.part}] = txnFloor
	}
	return offsets, func(committed map[kafka.TopicPartition]int64) {
		if in.gen != gen {
			return
		}
		for p, f := range committed {
			in.committed[tp{p.Topic, p.Partition}] = f
			in.m.committedOffset.Set(f, p.Topic, itoa(int64(p.Partition)))
		}
	}
}

// reportLoop logs what holds the stream (ARCHITECTURE.md §13.8), each
// condition at most once per missing_events_timeout.
func (in *Input) reportLoop(ctx context.Context) {
	kafka.Every(ctx, min(max(in.conf.missingEventsTimeout/4, 10*time.Millisecond), time.Second), func() {
		in.mu.Lock()
		var ps []problem
		if in.asm != nil && !in.revoking {
			ps = in.asm.problems(time.Now())
		}
		partial, stopped := in.partial, in.stopped
		if len(ps) > 0 || partial != nil || stopped != nil {
			in.m.stopped.Set(1)
		} else if in.asm != nil {
			in.m.stopped.Set(0)
		}
		in.mu.Unlock()
		if partial != nil && in.reports.Due("partial") {
			in.log.Errorf("%v", partial)
		}
		if stopped != nil && in.reports.Due("stopped") {
			in.log.Errorf("%v", stopped)
		}
		for _, p := range ps {
			if !in.reports.Due(p.key) {
				continue
			}
			if p.missing {
				in.m.incompleteReports.Incr(1)
			}
			in.log.Errorf("%s", p.msg)
		}
	})
}
