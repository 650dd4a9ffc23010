package debezium_txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// onAssigned starts a new assignment: a fresh assembler, a new epoch of the
// database partition, and a check that this member holds every partition
// of the subscription (ARCHITECTURE.md §13.1).
func (in *Input) onAssigned(ctx context.Context, cl *kgo.Client, assigned map[string][]int32) {
	var data []tp
	txnParts := 0
	for topic, parts := range assigned {
		for _, p := range parts {
			if topic == in.conf.transactionTopic {
				txnParts++
				continue
			}
			if in.conf.consumes(topic) {
				data = append(data, tp{topic, p})
			}
		}
	}
	partial := in.checkAssignment(ctx, assigned, txnParts)

	in.mu.Lock()
	defer in.mu.Unlock()
	in.owned = assigned
	in.gen++
	in.revoking, in.stopped, in.unacked = false, nil, 0
	in.paused, in.committed, in.sideEpochs = map[tp]bool{}, map[tp]int64{}, map[tp]uint64{}
	in.dataParts = map[tp]bool{}
	in.batchEms = nil
	in.m.stopped.Set(0)
	if len(assigned) == 0 {
		in.asm, in.partial = nil, nil
		in.m.standby.Set(1)
		in.log.Infof("No partitions assigned: standing by (another member of group %q reads the connector's topics)", in.conf.consumerGroup)
		return
	}
	in.m.standby.Set(0)
	in.partial = partial
	if partial != nil {
		in.asm = nil
		in.m.stopped.Set(1)
		in.log.Errorf("%v", partial)
		return
	}
	naming := in.conf.naming()
	a := newAssembler(assemblerConfig{
		partition:        in.dbPartition(),
		txnTopic:         in.conf.transactionTopic,
		topicOf:          naming.topicOf,
		mapped:           naming.mapped,
		consumed:         in.conf.consumes,
		maxBufferedBytes: in.conf.maxBufferedBytes,
		missingTimeout:   in.conf.missingEventsTimeout,
		resendWindow:     in.conf.resendWindow,
		skip:             in.conf.skipTransactions,
		untransacted:     in.conf.untransacted,
		truncate:         in.conf.truncate,
		valueWriter:      valueWriter{loc: in.conf.loc},
	})
	for _, p := range data {
		in.dataParts[p] = true
		a.assign(p)
	}
	in.asm, in.stats = a, assemblerStats{}
	in.reg.Forget(in.dbPartition())
	in.epoch = in.reg.Assign(in.dbPartition())
	sort.Slice(data, func(i, j int) bool { return data[i].String() < data[j].String() })
	in.log.Infof("Assigned the transaction topic and %d data partitions %v (epoch %d)", len(data), data, in.epoch)
}

// checkAssignment returns an error when the member holds some but not all
// partitions of the subscription, or the transaction topic has more than
// one partition.
func (in *Input) checkAssignment(ctx context.Context, assigned map[string][]int32, txnParts int) error {
	if len(assigned) == 0 {
		return nil
	}
	if txnParts != 1 {
		return fmt.Errorf("this member was assigned %d partitions of transaction_topic %q, not its one partition: another consumer with another group protocol shares group %q, or the topic has several partitions; nothing is emitted", txnParts, in.conf.transactionTopic, in.conf.consumerGroup)
	}
	in.mu.Lock()
	adm := in.adm
	in.mu.Unlock()
	if adm == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
	defer cancel()
	details, err := adm.ListTopics(lctx)
	if err != nil {
		in.log.Warnf("Listing topics to check the assignment: %v", err)
		return nil
	}
	if err := transactionTopicError(in.conf.transactionTopic, details); err != nil {
		return err
	}
	var missing []string
	for topic, d := range details {
		if !in.conf.consumes(topic) || d.Err != nil {
			continue
		}
		have := map[int32]bool{}
		for _, p := range assigned[topic] {
			have[p] = true
		}
		for p := range d.Partitions {
			if !have[p] {
				missing = append(missing, tp{topic, p}.String())
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		if len(missing) > 8 {
			missing = append(missing[:8], "…")
		}
		return fmt.Errorf("this member holds only part of the connector's partitions (missing %v): a Debezium transaction can only be assembled where all of its partitions are read, so nothing is emitted; run one pipeline per connector, with its own consumer_group", missing)
	}
	return nil
}

// adjustOffsets runs before consumption of an assignment begins: it resolves
// every start position, marks data partitions with nothing to read (the
// start gate), reads the output's exactly-once progress, and re-reads the
// last resend_window transactions before the transaction topic's start.
func (in *Input) adjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	in.mu.Lock()
	a, gen, adm := in.asm, in.gen, in.adm
	in.mu.Unlock()
	if a == nil || adm == nil {
		return offsets, nil
	}
	var topics []string
	for t := range offsets {
		topics = append(topics, t)
	}
	var starts, ends kadm.ListedOffsets
	for attempt := 0; ; attempt++ {
		lctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
		var err error
		if starts, err = adm.ListStartOffsets(lctx, topics...); err == nil {
			err = starts.Error()
		}
		if err == nil {
			if ends, err = adm.ListEndOffsets(lctx, topics...); err == nil {
				err = ends.Error()
			}
		}
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return offsets, nil
		}
		in.log.Warnf("Listing start and end offsets of the assignment (retried): %v", err)
		select {
		case <-ctx.Done():
			return offsets, nil
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 2*time.Second)):
		}
	}
	exact := map[string]map[int32]kgo.Offset{}
	resolved := map[tp]int64{}
	for topic, parts := range offsets {
		exact[topic] = map[int32]kgo.Offset{}
		for p, o := range parts {
			at := o.EpochOffset().Offset
			s, _ := starts.Lookup(topic, p)
			e, _ := ends.Lookup(topic, p)
			switch {
			case at == -2:
				at = s.Offset
			case at < 0:
				at = e.Offset
			case at < s.Offset:
				in.log.Errorf("The committed offset %d of %s/%d is below the partition's log start %d: retention deleted records this group never loaded; they are lost at the source", at, topic, p, s.Offset)
				at = s.Offset
			}
			resolved[tp{topic, p}] = at
			exact[topic][p] = kgo.NewOffset().At(at)
		}
	}
	txnStart, hasTxn := resolved[tp{in.conf.transactionTopic, 0}]
	progress, sideProgress := in.readProgress(ctx, resolved)
	var ids []string
	if hasTxn {
		ids = in.readBackIDs(ctx, txnStart)
	}

	in.mu.Lock()
	defer in.mu.Unlock()
	if in.gen != gen || in.asm != a {
		return exact, nil
	}
	for p, at := range resolved {
		if p.topic == in.conf.transactionTopic {
			a.txnStart(at)
			continue
		}
		if e, ok := ends.Lookup(p.topic, p.part); ok && at >= e.Offset {
			a.markEmpty(p)
		}
	}
	if progress >= 0 {
		a.setProgress(endOffsetOf(progress))
		in.log.Infof("exactly_once: transactions whose END is at or below %s offset %d are in StarRocks already and are skipped", in.conf.transactionTopic, endOffsetOf(progress))
	}
	for p, off := range sideProgress {
		a.setSideProgress(p, off)
	}
	for _, id := range ids {
		a.remember(id, doneTxn{whole: true})
	}
	return exact, nil
}

// readProgress reads the output's durable progress (exactly_once) of the
// database partition and of every side partition; -1 and none without.
func (in *Input) readProgress(ctx context.Context, resolved map[tp]int64) (int64, map[tp]int64) {
	side := map[tp]int64{}
	pctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
	defer cancel()
	progress := int64(-1)
	off, ok, err := in.reg.Progress(pctx, in.dbPartition())
	if err != nil {
		in.log.Warnf("Reading the output's progress of %s failed; replays are dropped by the output: %v", in.dbPartition(), err)
	} else if ok {
		progress = off
	}
	if !ok || err != nil {
		// No progress reader (at_least_once or another output), or it
		// failed: side partitions have none either.
		return progress, side
	}
	for p := range resolved {
		if p.topic == in.conf.transactionTopic {
			continue
		}
		if off, ok, err := in.reg.Progress(pctx, p.String()); err == nil && ok {
			side[p] = off
		}
	}
	return progress, side
}

// readBackChunks is how many pieces readBackIDs reads, newest first, and
// readBackMinPiece the fewest records of a piece: a short history is read
// in one piece, as each piece costs a client and its first fetch.
const readBackChunks = 4

var readBackMinPiece int64 = 16384

// readBackIDs reads the transaction topic's END events of the last
// resend_window transactions before start (2 × resend_window records: a
// BEGIN and an END each), so that one Debezium re-sends whole after a
// restart is recognised. It reads the range in pieces, the newest first —
// the newest are the ones a connector restart re-sends — so when
// revoke_timeout runs out, what is kept is the most recent part, and the
// error says from which offset on ids are remembered (a whole re-send from
// before it is loaded again: at-least-once; exactly_once still drops it by
// position when it is at or below the progress).
func (in *Input) readBackIDs(ctx context.Context, start int64) []string {
	from := max(start-2*int64(in.conf.resendWindow), 0)
	if from >= start {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
	defer cancel()
	step := max((start-from+readBackChunks-1)/readBackChunks, readBackMinPiece, 1)
	var pieces [][]string // newest first
	remembered := start
	for hi := start; hi > from; hi -= step {
		lo := max(hi-step, from)
		ids, err := in.readEnds(rctx, lo, hi)
		if err != nil {
			in.log.Errorf("Re-reading the END events of %s before offset %d: %v; only the ids of ENDs from offset %d on are remembered, so a transaction Debezium re-sends whole from before that is loaded again (raise revoke_timeout, or lower resend_window)", in.conf.transactionTopic, start, err, remembered)
			break
		}
		pieces = append(pieces, ids)
		remembered = lo
	}
	var out []string
	for i := len(pieces) - 1; i >= 0; i-- {
		out = append(out, pieces[i]...)
	}
	return out
}

// readEnds returns the ids of the END events at offsets [lo, hi) of the
// transaction topic, in offset order.
func (in *Input) readEnds(ctx context.Context, lo, hi int64) ([]string, error) {
	cl, err := kgo.NewClient(append(in.conf.client.Opts(in.logger()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{in.conf.transactionTopic: {0: kgo.NewOffset().At(lo)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	defer cl.Close()
	var ids []string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("not done within revoke_timeout: %w", ctx.Err())
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= hi-1 {
				done = true
			}
			if r.Offset < lo || r.Offset >= hi || r.Attrs.IsControl() {
				return
			}
			if m, err := decodeTxnMeta(r.Value); err == nil && m.end {
				ids = append(ids, m.id)
			}
		})
		if done {
			return ids, nil
		}
	}
}

func (in *Input) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	in.release(ctx, cl, true)
}

func (in *Input) onLost(ctx context.Context, cl *kgo.Client, lost map[string][]int32) {
	in.mu.Lock()
	// Out of the group: another member may own everything by now.
	in.owned = nil
	in.mu.Unlock()
	in.release(ctx, cl, false)
}

// release ends the assignment (ARCHITECTURE.md §13.9): nothing more is
// emitted, a batch emitted a moment ago may still reach the output, every
// partition the input wrote is fenced, the floors are committed (on a
// revoke, not on a loss) and everything buffered is dropped.
func (in *Input) release(ctx context.Context, cl *kgo.Client, commit bool) {
	in.mu.Lock()
	if in.asm == nil {
		in.asm, in.partial, in.dataParts = nil, nil, nil
		in.gen++
		in.mu.Unlock()
		return
	}
	in.revoking = true
	ids := []string{in.dbPartition()}
	for p := range in.sideEpochs {
		ids = append(ids, p.String())
	}
	lastEmit := in.lastEmit
	in.mu.Unlock()
	sort.Strings(ids)

	if wait := time.Until(lastEmit.Add(min(maxRevokeDrain, in.conf.revokeTimeout/4))); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
	}
	// Committed-through offsets published during the fence are still
	// applied (revoking stops emission and acknowledgements only).
	fctx, cancel := context.WithTimeout(ctx, in.conf.revokeTimeout)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if err := in.reg.Fence(fctx, id); err != nil {
				in.log.Warnf("Fencing %s in the output: %v", id, err)
			}
		}(id)
	}
	wg.Wait()
	cancel()
	in.m.fences.Incr(int64(len(ids)))
	if commit {
		cctx, cancel := context.WithTimeout(ctx, in.conf.rebalanceTimeout-in.conf.revokeTimeout)
		if err := in.commit(cctx, cl); err != nil {
			in.log.Warnf("Committing the floors on revoke: %v", err)
		}
		cancel()
	}
	in.mu.Lock()
	if len(in.paused) > 0 {
		resume := map[string][]int32{}
		for p := range in.paused {
			resume[p.topic] = append(resume[p.topic], p.part)
		}
		in.cl.ResumeFetchPartitions(resume)
	}
	in.asm, in.partial, in.paused, in.dataParts, in.batchEms = nil, nil, map[tp]bool{}, nil, nil
	in.unacked, in.revoking = 0, false
	in.gen++
	in.m.bufferedBytes.Set(0)
	in.m.bufferedTxns.Set(0)
	in.m.inFlight.Set(0)
	in.signalLocked()
	in.mu.Unlock()
	if in.batcher != nil {
		// Messages in the batcher were never delivered (nor numbered).
		_, _ = in.batcher.Flush(context.Background())
	}
	if commit {
		in.log.Infof("Revoked the assignment: fenced %v, committed the floors, dropped what was buffered", ids)
	} else {
		in.log.Warnf("Lost the assignment: fenced %v, not committed, dropped what was buffered", ids)
	}
}

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
