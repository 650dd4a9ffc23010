// This file holds the fetch loop: polling the Kafka client, decoding each
// fetched partition, feeding the assembler and listing the data partitions'
// end offsets for the snapshot gate.

package debezium_txn

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//------------------------------------------------------------------------------

// Fetched decodes the values of a poll's data records before the lock is
// taken, so ReadBatch and acknowledgements are not held up by the
// decoding, and feeds them to the assembler under it.
func (in *Input) Fetched(fetches kgo.Fetches) func() {
	now := time.Now()
	var parts []fetchedPartition
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		parts = append(parts, in.decodePartition(fp))
	})
	return func() {
		if a := in.asm; a != nil && !in.revoking {
			for _, fp := range parts {
				in.feedLocked(a, fp, now)
			}
			in.afterFeedLocked()
		}
	}
}

// fetchedPartition is one partition's fetched records, data values decoded.
type fetchedPartition struct {
	kgo.FetchTopicPartition
	decoded []decoded
}

// decodePartition decodes the values of a data partition's records. Only
// the poll goroutine uses in.dec.
func (in *Input) decodePartition(fp kgo.FetchTopicPartition) fetchedPartition {
	out := fetchedPartition{FetchTopicPartition: fp}
	if fp.Topic == in.conf.transactionTopic {
		return out
	}
	out.decoded = make([]decoded, len(fp.Records))
	for i, r := range fp.Records {
		if !r.Attrs.IsControl() {
			out.decoded[i] = decodeRecord(in.dec, r.Key, r.Value)
		}
	}
	return out
}

// feedLocked hands one partition's fetched records to the assembler.
func (in *Input) feedLocked(a *assembler, fp fetchedPartition, now time.Time) {
	txnTopic := fp.Topic == in.conf.transactionTopic
	if txnTopic && fp.HighWatermark >= 0 {
		a.txnHighWatermark(fp.HighWatermark)
	}
	if !txnTopic && !in.dataParts[tp{fp.Topic, fp.Partition}] {
		return
	}
	for i, r := range fp.Records {
		if r.Attrs.IsControl() {
			a.controlRecord(tp{r.Topic, r.Partition}, r.Offset)
			continue
		}
		var err error
		if txnTopic {
			err = a.addTxnMeta(r.Offset, r.Value, now)
		} else {
			err = a.addDecoded(fp.decoded[i], recMeta{tp: tp{r.Topic, r.Partition}, offset: r.Offset, key: string(r.Key), ts: r.Timestamp}, now)
		}
		if err != nil && !errors.Is(err, errPartitionStopped) {
			in.log.Errorf("%v; the partition is stopped there: nothing at or after it is emitted or committed", err)
		}
	}
}

// afterFeedLocked updates what depends on the assembler's state: pauses,
// the end-offsets listing of the snapshot gate, the metrics.
func (in *Input) afterFeedLocked() {
	a := in.asm
	if a == nil {
		return
	}
	in.updatePausesLocked()
	if after, last, ok := a.wantEnds(); ok {
		go in.listEnds(in.gen, after, last)
	}
	in.syncMetricsLocked()
}

func (in *Input) syncMetricsLocked() {
	a := in.asm
	if a == nil {
		return
	}
	in.m.addStats(a.stats, in.stats)
	in.stats = a.stats
	in.m.bufferedBytes.Set(a.buffered)
	in.m.bufferedTxns.Set(int64(len(a.txns)))
	in.m.inFlight.Set(int64(in.unacked))
}

// listEnds lists the data partitions' end offsets for the snapshot gate.
func (in *Input) listEnds(gen uint64, after int64, last bool) {
	in.mu.Lock()
	adm := in.adm
	topics := map[string]bool{}
	for p := range in.dataParts {
		topics[p.topic] = true
	}
	in.mu.Unlock()
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), in.conf.RevokeTimeout)
	res, err := adm.ListEndOffsets(ctx, names...)
	cancel()
	var ends map[tp]int64
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		in.log.Warnf("Listing the data partitions' end offsets for the snapshot gate (retried): %v", err)
		time.Sleep(time.Second)
	} else {
		ends = map[tp]int64{}
		res.Each(func(o kadm.ListedOffset) { ends[tp{o.Topic, o.Partition}] = o.Offset })
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.gen != gen || in.asm == nil {
		return
	}
	in.asm.endsListed(after, last, ends)
	in.afterFeedLocked()
	in.SignalLocked()
}
