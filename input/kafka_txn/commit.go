package kafka_txn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// onCommitted receives the output's committed-through offsets.
func (in *Input) onCommitted(id string, offset int64) {
	in.mu.Lock()
	if ps := in.parts[id]; ps != nil && offset > ps.committedThru {
		ps.committedThru = offset
	}
	in.mu.Unlock()
}

// onUnclaimed is told by the registry of a partition key the output or the
// assembler uses that no input assigned: starrocks_partition was changed on
// the way (the assembler's partition field or a mapping), so the output's
// committed-through offsets and fences never meet this input's partitions.
// The registry reports each key once.
func (in *Input) onUnclaimed(key string, claimed []string) {
	in.m.unmatchedKeys.Incr(1)
	in.log.Warnf("Partition key %q of the metadata contract (%s) matches none of the Kafka partitions the input assigned (%s): "+
		"the output publishes what it committed and takes fences under that key, so the input commits no offsets for it and a rebalance fences nothing "+
		"(a restart re-reads everything; a revoked partition's open transaction is not dropped). "+
		"%s must stay <topic>/<partition> as the input delivers it: leave the txn_assembler's partition field unset and do not change %s in a mapping",
		key, contract.KeyPartition, strings.Join(claimed, ", "), contract.KeyPartition, contract.KeyPartition)
}

// commit commits the committable offsets of the given partitions (all
// assigned, non-revoking partitions when ids is nil).
func (in *Input) commit(ctx context.Context, cl *kgo.Client, ids []string) error {
	in.commitMu.Lock()
	defer in.commitMu.Unlock()

	tracking := in.reg.Tracking()
	type target struct {
		ps  *partState
		off int64
	}
	var targets []target
	offsets := map[string]map[int32]kgo.EpochOffset{}
	in.mu.Lock()
	add := func(ps *partState) {
		t := ps.commitTarget(tracking)
		if t < 0 || t <= ps.lastCommitted {
			return
		}
		if offsets[ps.topic] == nil {
			offsets[ps.topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[ps.topic][ps.part] = kgo.EpochOffset{Epoch: -1, Offset: t}
		targets = append(targets, target{ps: ps, off: t})
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
	in.mu.Unlock()
	if len(targets) == 0 {
		return nil
	}

	var commitErr error
	failed := map[string]error{}
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			commitErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil {
					failed[contract.KafkaPartition(t.Topic, p.Partition)] = perr
				}
			}
		}
	})
	if commitErr != nil {
		in.m.commitErrors.Incr(1)
		return fmt.Errorf("committing offsets of group %q: %w", in.conf.consumerGroup, commitErr)
	}
	in.mu.Lock()
	for _, t := range targets {
		if _, bad := failed[t.ps.id]; bad {
			continue
		}
		if t.off > t.ps.lastCommitted {
			t.ps.lastCommitted = t.off
			in.m.committedOffset.Set(t.off, t.ps.topic, t.ps.label)
			in.updateLagLocked(t.ps)
		}
	}
	in.mu.Unlock()
	if len(failed) > 0 {
		in.m.commitErrors.Incr(1)
		var errs []error
		for id, err := range failed {
			if errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition) {
				err = fmt.Errorf("the topic no longer exists (deleted?), fix topics or recreate it: %w", err)
			}
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
		}
		return fmt.Errorf("committing offsets of group %q: %w", in.conf.consumerGroup, errors.Join(errs...))
	}
	in.m.commits.Incr(1)
	return nil
}

// commitLoop commits the committable offsets every commit_period; a
// failed commit is retried at the next period and logged rate-limited.
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
		if err := in.commit(cctx, cl, nil); err != nil && ctx.Err() == nil && in.logDue("commit:"+err.Error()) {
			in.log.Warnf("%v (retried every %s; repeats of this error are logged every %s)", err, in.conf.commitPeriod, kafka.LogInterval)
		}
		in.refreshPausedHWM(cctx, cl)
		cancel()
	}
}
