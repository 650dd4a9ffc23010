// This file holds the background loops: committing the floors to Kafka
// every commit_period and reporting what holds the stream.

package debezium_txn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commit commits the floors that moved (ARCHITECTURE.md §13.6).
func (in *Input) commit(ctx context.Context, cl *kgo.Client) error {
	in.commitMu.Lock()
	defer in.commitMu.Unlock()
	in.mu.Lock()
	a, gen := in.asm, in.gen
	if a == nil || in.partial != nil {
		in.mu.Unlock()
		return nil
	}
	data, txnFloor := a.floors()
	targets := map[tp]int64{}
	for p, f := range data {
		if cur, ok := in.committed[p]; !ok || f > cur {
			targets[p] = f
		}
	}
	txnTP := tp{in.conf.transactionTopic, 0}
	if cur, ok := in.committed[txnTP]; txnFloor >= 0 && (!ok || txnFloor > cur) {
		targets[txnTP] = txnFloor
	}
	in.mu.Unlock()
	if len(targets) == 0 {
		return nil
	}
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for p, f := range targets {
		if offsets[p.topic] == nil {
			offsets[p.topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[p.topic][p.part] = kgo.EpochOffset{Epoch: -1, Offset: f}
	}
	var commitErr error
	failed := map[tp]error{}
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil {
					failed[tp{t.Topic, p.Partition}] = perr
				}
			}
		}
	})
	if commitErr != nil {
		in.m.commitErrors.Incr(1)
		return fmt.Errorf("committing offsets of group %q: %w", in.conf.consumerGroup, commitErr)
	}
	in.mu.Lock()
	if in.gen == gen {
		for p, f := range targets {
			if _, bad := failed[p]; bad {
				continue
			}
			in.committed[p] = f
			in.m.committedOffset.Set(f, p.topic, itoa(int64(p.part)))
		}
	}
	in.mu.Unlock()
	if len(failed) > 0 {
		in.m.commitErrors.Incr(1)
		var errs []error
		for p, err := range failed {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
		return fmt.Errorf("committing offsets of group %q: %w", in.conf.consumerGroup, errors.Join(errs...))
	}
	in.m.commits.Incr(1)
	return nil
}

func (in *Input) commitLoop(ctx context.Context, cl *kgo.Client) {
	defer in.loops.Done()
	ticker := time.NewTicker(in.conf.commitPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		cctx, cancel := context.WithTimeout(ctx, max(in.conf.commitPeriod*5, 10*time.Second))
		if err := in.commit(cctx, cl); err != nil && ctx.Err() == nil && in.lim.Due("commit:"+err.Error()) {
			in.log.Warnf("%v (retried every %s)", err, in.conf.commitPeriod)
		}
		cancel()
	}
}

// reportLoop logs what holds the stream (ARCHITECTURE.md §13.8), each
// condition at most once per missing_events_timeout.
func (in *Input) reportLoop(ctx context.Context) {
	defer in.loops.Done()
	ticker := time.NewTicker(min(max(in.conf.missingEventsTimeout/4, 10*time.Millisecond), time.Second))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
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
	}
}
