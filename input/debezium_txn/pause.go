// This file holds the buffer bound's pauses: the data partitions the oldest
// transaction does not need, and the transaction topic, while the buffer is
// full.

package debezium_txn

// updatePausesLocked pauses stopped partitions and, while the bound holds
// (assembler.atBound), every data partition the oldest transaction does not
// need (assembler.mustRead), and the transaction topic once that
// transaction's END is read. A transaction larger than the bound still
// completes: the partitions it needs stay read however much is buffered
// (ARCHITECTURE.md §13.8).
//
// franz-go sends a resumed partition only with the next fetch, after the
// one in flight, and a fetch of partitions with nothing to read waits
// fetch_max_wait: a fetch of the transaction topic alone, read to its end,
// held back every partition resumed meanwhile. With the topic paused too,
// no fetch is in flight while nothing may be read, and the resume that
// emitting the oldest transaction makes (nextBatchLocked) starts one at
// once.
func (in *Input) updatePausesLocked() {
	a := in.asm
	want := map[tp]bool{}
	full := a.atBound()
	var rs readSet
	if full {
		rs = a.mustRead()
	}
	for p := range in.dataParts {
		if ps := a.parts[p]; ps != nil && ps.failed != nil {
			want[p] = true
			continue
		}
		if full && !rs.parts[p] {
			want[p] = true
		}
	}
	if full && !rs.txnTopic {
		want[tp{in.conf.transactionTopic, 0}] = true
	}
	if full {
		in.m.bufferFull.Set(1)
	} else {
		in.m.bufferFull.Set(0)
	}
	pause, resume := map[string][]int32{}, map[string][]int32{}
	for p := range want {
		if !in.paused[p] {
			pause[p.topic] = append(pause[p.topic], p.part)
			in.paused[p] = true
		}
	}
	for p := range in.paused {
		if !want[p] {
			resume[p.topic] = append(resume[p.topic], p.part)
			delete(in.paused, p)
		}
	}
	if len(pause) > 0 {
		in.cl.PauseFetchPartitions(pause)
	}
	if len(resume) > 0 {
		in.cl.ResumeFetchPartitions(resume)
	}
}
