package kafka_txn

import (
	"context"
	"fmt"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/kafka"
)

// stallLoop reports partitions that sit at checkpoint_limit with no
// acknowledgement for checkpoint_stall_timeout, and repeats the error of a
// partition stopped by a nack.
func (in *Input) stallLoop(ctx context.Context) {
	kafka.Every(ctx, min(max(in.conf.checkpointStallTimeout/4, time.Millisecond), maxStallCheckInterval), func() {
		now := time.Now()
		in.mu.Lock()
		for _, ps := range in.parts {
			report, atLimit := ps.stallReport(now, in.conf.checkpointLimit, in.conf.checkpointStallTimeout)
			if report == "" {
				continue
			}
			if atLimit {
				in.m.stalls.Incr(1, ps.topic, ps.label)
			}
			in.log.Error(report)
		}
		in.mu.Unlock()
	})
}

// stallReport returns the error to log for the partition now, or "": the
// nack that stopped it, repeated every timeout, or (atLimit) a report that
// it has sat at limit unacknowledged messages with no acknowledgement for
// timeout, repeated every timeout. It records the report as made.
func (ps *partState) stallReport(now time.Time, limit int, timeout time.Duration) (report string, atLimit bool) {
	if ps.revoking {
		return "", false
	}
	if ps.failed != nil {
		if now.Sub(ps.lastStallReport) < timeout {
			return "", false
		}
		ps.lastStallReport = now
		return fmt.Sprintf("%v; nothing at or past offset %d is committed", ps.failed, ps.failedAt), false
	}
	if ps.unacked < limit {
		return "", false
	}
	since := ps.limitSince
	if ps.lastAck.After(since) {
		since = ps.lastAck
	}
	if now.Sub(since) < timeout || now.Sub(ps.lastStallReport) < timeout {
		return "", false
	}
	ps.lastStallReport = now
	first := ps.deliveredNext - 1
	if len(ps.pending) > 0 {
		first = ps.pending[0].first
	}
	open := ""
	if ps.committedThru >= ps.firstOffset && ps.firstOffset >= 0 {
		open = fmt.Sprintf("; the output has committed through offset %d, so the open source transaction spans up to %d offsets (%d-%d)",
			ps.committedThru, ps.deliveredNext-1-ps.committedThru, ps.committedThru+1, ps.deliveredNext-1)
	}
	return fmt.Sprintf("Partition %s has sat at checkpoint_limit (%d unacknowledged messages, offsets %d-%d) for %s with no acknowledgement%s: a source transaction larger than checkpoint_limit cannot complete while the output holds its acknowledgements until it commits; raise checkpoint_limit above the largest source transaction size (in messages)",
		ps.id, ps.unacked, first, ps.deliveredNext-1, now.Sub(since).Round(time.Millisecond), open), true
}
