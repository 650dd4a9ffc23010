package kafka

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicPartition names a partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is the partition as the metadata contract names it:
// <topic>/<partition>.
func (p TopicPartition) String() string {
	return p.Topic + "/" + strconv.Itoa(int(p.Partition))
}

// CommitCounters are the metrics of offset commits: Commits counts the
// commits the coordinator took whole, Errors the failed or partly refused
// ones.
type CommitCounters struct {
	Commits, Errors *service.MetricCounter
}

// CommitOffsets commits offsets to the consumer group of cl, synchronously,
// and counts the outcome in m. done, when not nil, is called once with the offsets the coordinator took
// (all of them, or those it did not refuse); it is not called when the
// request failed. The error, naming group, says that the request failed or
// which partitions were refused and why.
func CommitOffsets(ctx context.Context, cl *kgo.Client, group string, offsets map[TopicPartition]int64, m CommitCounters, done func(committed map[TopicPartition]int64)) error {
	if len(offsets) == 0 {
		return nil
	}
	err := commitOffsets(ctx, cl, group, offsets, done)
	if err != nil {
		m.Errors.Incr(1)
	} else {
		m.Commits.Incr(1)
	}
	return err
}

func commitOffsets(ctx context.Context, cl *kgo.Client, group string, offsets map[TopicPartition]int64, done func(committed map[TopicPartition]int64)) error {
	req := map[string]map[int32]kgo.EpochOffset{}
	for p, off := range offsets {
		if req[p.Topic] == nil {
			req[p.Topic] = map[int32]kgo.EpochOffset{}
		}
		req[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: -1, Offset: off}
	}
	var reqErr error
	refused := map[TopicPartition]error{}
	cl.CommitOffsetsSync(ctx, req, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			reqErr = err
			return
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if perr := kerr.ErrorForCode(p.ErrorCode); perr != nil {
					refused[TopicPartition{t.Topic, p.Partition}] = perr
				}
			}
		}
	})
	if reqErr != nil {
		return fmt.Errorf("committing offsets of group %q: %w", group, reqErr)
	}
	if done != nil {
		committed := make(map[TopicPartition]int64, len(offsets))
		for p, off := range offsets {
			if _, bad := refused[p]; !bad {
				committed[p] = off
			}
		}
		done(committed)
	}
	if len(refused) == 0 {
		return nil
	}
	ps := make([]TopicPartition, 0, len(refused))
	for p := range refused {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].Partition < ps[j].Partition
	})
	errs := make([]error, 0, len(ps))
	for _, p := range ps {
		err := refused[p]
		if errors.Is(err, kerr.UnknownTopicID) || errors.Is(err, kerr.UnknownTopicOrPartition) {
			err = fmt.Errorf("the topic no longer exists (deleted?), fix topics or recreate it: %w", err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", p, err))
	}
	return fmt.Errorf("committing offsets of group %q: %w", group, errors.Join(errs...))
}

// CommitLoop calls commit every commit_period until ctx ends, each call
// bounded by five periods (at least 10 s). A failed commit is retried at
// the next period and logged, each error text at most once per
// LogInterval (lim). after, when not nil, runs after each commit with the
// same bounded context.
func (g GroupConfig) CommitLoop(ctx context.Context, log *service.Logger, lim *LogLimiter, commit func(context.Context) error, after func(context.Context)) {
	Every(ctx, g.CommitPeriod, func() {
		cctx, cancel := context.WithTimeout(ctx, max(g.CommitPeriod*5, 10*time.Second))
		defer cancel()
		if err := commit(cctx); err != nil && ctx.Err() == nil && lim.Due("commit:"+err.Error()) {
			log.Warnf("%v (retried every %s; repeats of this error are logged every %s)", err, g.CommitPeriod, LogInterval)
		}
		if after != nil {
			after(cctx)
		}
	})
}

// Every calls fn every period until ctx ends, the first time one period
// from now.
func Every(ctx context.Context, period time.Duration, fn func()) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		fn()
	}
}
