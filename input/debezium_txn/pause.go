// This file holds the buffer bound: pausing and resuming the data partitions
// the oldest transaction does not need while the buffer is full.

package debezium_txn

// updatePausesLocked pauses stopped partitions and, at max_buffered_bytes,
// every data partition the oldest transaction by END order does not need
// to be emitted (assembler.mustRead); the transaction topic is always read.
// A transaction larger than the bound still completes: the partitions it
// needs stay read however much is buffered (ARCHITECTURE.md §13.8).
func (in *Input) updatePausesLocked() {
	a := in.asm
	want := map[tp]bool{}
	full := a.cfg.maxBufferedBytes > 0 && a.buffered >= a.cfg.maxBufferedBytes
	var keep map[tp]bool
	known := false
	if full {
		keep, known = a.mustRead()
	}
	for p := range in.dataParts {
		if ps := a.parts[p]; ps != nil && ps.failed != nil {
			want[p] = true
			continue
		}
		if full && (!known || !keep[p]) {
			want[p] = true
		}
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
