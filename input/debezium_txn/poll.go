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
	buf := in.decodedBuffer(fetches.NumRecords())
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		var fpart fetchedPartition
		fpart, buf.recs = in.decodePartition(fp, buf.recs)
		parts = append(parts, fpart)
	})
	return func() {
		if a := in.asm; a != nil && !in.revoking {
			for _, fp := range parts {
				in.feedLocked(a, fp, now)
			}
			in.afterFeedLocked()
		}
		in.releaseDecoded(buf)
		// The assembler keeps copies only (a decoded event holds no
		// byte of its record): the records and their decompressed
		// batches go back to the client's pools (fetchpool.go).
		fetches.EachRecord(func(r *kgo.Record) { r.Recycle() })
	}
}

// releaseDecoded gives a poll's buffer back once the assembler copied what
// it keeps, holding nothing.
func (in *Input) releaseDecoded(buf *decodedBuf) {
	clear(buf.all[:min(len(buf.recs), len(buf.all))])
	buf.recs = buf.all[:0]
	in.decodedPool.Put(buf)
}

// decodedBuf is the decoded records of one poll: every partition's
// decoded values are a piece of all, handed out from recs.
type decodedBuf struct {
	all, recs []decoded
}

// decodedBuffer returns a buffer for n decoded records: one of an earlier
// poll when it is large enough (a poll's decoded values are garbage once
// the assembler copied them: reused, they cost no allocation per poll).
func (in *Input) decodedBuffer(n int) *decodedBuf {
	if b, _ := in.decodedPool.Get().(*decodedBuf); b != nil && cap(b.all) >= n {
		return b
	}
	all := make([]decoded, 0, n)
	return &decodedBuf{all: all[:cap(all)], recs: all}
}

// fetchedPartition is one partition's fetched records, data values decoded.
type fetchedPartition struct {
	kgo.FetchTopicPartition
	decoded []decoded
}

// decodePartition decodes the values of a data partition's records into
// the front of buf, and returns the rest of buf. Only the poll goroutine
// uses in.dec.
func (in *Input) decodePartition(fp kgo.FetchTopicPartition, buf []decoded) (fetchedPartition, []decoded) {
	out := fetchedPartition{FetchTopicPartition: fp}
	if fp.Topic == in.conf.transactionTopic {
		return out, buf
	}
	n := len(fp.Records)
	if cap(buf)-len(buf) < n {
		buf = make([]decoded, 0, n)
	}
	out.decoded = buf[len(buf) : len(buf)+n : len(buf)+n]
	for i, r := range fp.Records {
		if !r.Attrs.IsControl() {
			out.decoded[i] = decodeRecord(in.dec, r.Key, r.Value)
		}
	}
	return out, buf[:len(buf)+n]
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
