package starrocks_txn

import "time"

// The manager loop: the source-idle switch, the sequence-gap timeout, the
// max_in_flight starvation report and the gauges.

// manager runs the source-idle switch, the sequence-gap timeout and the
// capacity checks.
func (o *Output) manager() {
	defer o.wg.Done()
	tick := o.conf.miniInterval() / 4
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-o.ctx.Done():
			return
		case <-t.C:
		}
		now := o.now()
		o.mu.Lock()
		o.switchIdleLocked(now)
		o.checkGapsLocked(now)
		o.checkInFlightLocked(now)
		o.updateGaugesLocked()
		o.mu.Unlock()
	}
}

// checkInFlightLocked reports when every WriteBatch slot waits on open source
// transactions: nothing can commit, and nothing new can arrive to end them.
func (o *Output) checkInFlightLocked(now time.Time) {
	if o.waiting < o.conf.maxInFlight || o.committable > 0 {
		return
	}
	if len(o.progressWait) > 0 {
		// Waiting for a progress read, which reports its own errors.
		return
	}
	for _, sq := range o.seqs {
		if len(sq.pending) > 0 {
			// Waiting for a sequence gap, which is reported on its own.
			return
		}
	}
	for _, w := range o.workers {
		if len(w.queue) > 0 || w.busy || w.committing > 0 {
			return
		}
	}
	if now.Sub(o.lastMIFErr) < reportEvery {
		return
	}
	o.lastMIFErr = now
	o.log.Errorf("All max_in_flight (%d) WriteBatch calls wait on open source transactions whose END is in a batch that cannot be delivered: raise max_in_flight to at least (batches per commit cycle + batches one source transaction spans) × partitions", o.conf.maxInFlight)
	o.m.mifStarved.Incr(1)
}

func (o *Output) updateGaugesLocked() {
	o.m.buffered.Set(o.buffered)
	regions := map[string]struct{}{}
	for _, p := range o.parts {
		add := func(t *srcTxn) {
			for tbl := range t.rows {
				regions[p.key.String()+"\x00"+t.db+"\x00"+tbl] = struct{}{}
			}
		}
		for _, t := range p.active {
			add(t)
		}
		if p.open != nil {
			add(p.open)
		}
	}
	o.m.openRegions.Set(int64(len(regions)))
	n := 0
	for _, p := range o.parts {
		if p.stalled != nil {
			n++
		}
	}
	o.m.stalledPartitions.Set(int64(n))
}
