package debezium_txn

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Assign starts a new assignment: a fresh assembler, the database partition
// claimed (a new epoch and its lease: internal/kafka/consumer), and a check
// that this member holds every partition of the subscription
// (ARCHITECTURE.md §13.1).
func (in *Input) Assign(ctx context.Context, assigned map[string][]int32) {
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
		in.log.Infof("No partitions assigned: standing by (another member of group %q reads the connector's topics)", in.conf.ConsumerGroup)
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
	in.epoch = in.ClaimLocked(in.dbPartition())
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
		return fmt.Errorf("this member was assigned %d partitions of transaction_topic %q, not its one partition: another consumer with another group protocol shares group %q, or the topic has several partitions; nothing is emitted", txnParts, in.conf.transactionTopic, in.conf.ConsumerGroup)
	}
	in.mu.Lock()
	adm := in.adm
	in.mu.Unlock()
	if adm == nil {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, in.conf.RevokeTimeout)
	defer cancel()
	details, err := adm.ListTopics(lctx)
	if err != nil {
		// The transaction topic's id is not known for this assignment: an
		// earlier listing's may be a recreated topic's (endCache.check then
		// forgets what the read-back remembers).
		in.mu.Lock()
		in.txnTopicID = [16]byte{}
		in.mu.Unlock()
		in.log.Warnf("Listing topics to check the assignment: %v", err)
		return nil
	}
	if err := transactionTopicError(in.conf.transactionTopic, details); err != nil {
		return err
	}
	if d, ok := details[in.conf.transactionTopic]; ok && d.Err == nil {
		in.mu.Lock()
		in.txnTopicID = d.ID
		in.mu.Unlock()
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

// AdjustOffsets runs before consumption of an assignment begins: it resolves
// every start position, marks data partitions with nothing to read (the
// start gate), reads the output's exactly-once progress, and re-reads the
// last resend_window transactions before the transaction topic's start.
func (in *Input) AdjustOffsets(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
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
		// The bound grows when a listing runs out of it, and the next
		// assignment starts from it (growBound): a broker too slow for
		// revoke_timeout is still listed.
		bound := in.listBound.get(in.conf.RevokeTimeout)
		began := time.Now()
		lctx, cancel := context.WithTimeout(ctx, bound)
		var err error
		if starts, err = adm.ListStartOffsets(lctx, topics...); err == nil {
			err = starts.Error()
		}
		if err == nil {
			if ends, err = adm.ListEndOffsets(lctx, topics...); err == nil {
				err = ends.Error()
			}
		}
		ranOut := lctx.Err() != nil
		cancel()
		if err == nil {
			in.listBound.done(bound, time.Since(began), in.conf.RevokeTimeout)
			break
		}
		if ctx.Err() != nil {
			return offsets, nil
		}
		if ranOut {
			in.listBound.ranOut(bound, readBackMaxBound)
		}
		in.log.Warnf("Listing start and end offsets of the assignment (retried within %v): %v", in.listBound.get(in.conf.RevokeTimeout), err)
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
		in.mu.Lock()
		topicID := in.txnTopicID
		in.mu.Unlock()
		txnEnd := int64(-1)
		if e, ok := ends.Lookup(in.conf.transactionTopic, 0); ok {
			txnEnd = e.Offset
		}
		if !in.ends.check(topicID, txnStart, txnEnd) {
			in.log.Infof("The END ids of %s read back earlier in this process are forgotten: the start %d is below an earlier one, or the topic was recreated or truncated; they are read again", in.conf.transactionTopic, txnStart)
		}
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
