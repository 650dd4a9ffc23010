package starrocks_txn

// Home of G24 (ARCHITECTURE.md §11.1): the output's state and metric series stay bounded. Main
// test: TestIdleSeqSourcesAreForgottenAndResume.
//
// Home of G26 (ARCHITECTURE.md §11.1): every max_in_flight slot held on open transactions for
// two commit intervals is reported. Main test: TestMaxInFlightStarvationIsReported.

import "time"

// The manager loop and the checks it runs in the core at each tick
// (core.tick): the source-idle switch, the sequence-gap and parked-message
// timeouts, the max_in_flight starvation report, the pruning of idle seq
// sources and the gauges.

// manager runs a step of the core (core.tick) four times per miniInterval.
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
		o.core.tick(now)
		o.mu.Unlock()
	}
}

// checkInFlight reports when every WriteBatch slot waits on open source
// transactions: nothing can commit, and nothing new can arrive to end them.
// Only calls whose messages are all in their partitions count (core.held),
// and the state must last starveHold: a call still parsing or one whose
// transactions just committed passes through it on a busy machine, while
// real starvation lasts for good.
func (k *core) checkInFlight(now time.Time) {
	if !k.starved() {
		k.starvedSince = time.Time{}
		return
	}
	if k.starvedSince.IsZero() {
		k.starvedSince = now
	}
	if now.Sub(k.starvedSince) < k.starveHold() || now.Sub(k.lastMIFErr) < reportEvery {
		return
	}
	k.lastMIFErr = now
	k.fx.logf(logError, "", "All max_in_flight (%d) WriteBatch calls wait on open source transactions whose END is in a batch that cannot be delivered: raise max_in_flight to at least (batches per commit cycle + batches one source transaction spans) × partitions", k.conf.maxInFlight)
	k.fx.count(ctrMaxInFlightStarved, 1, "")
}

// starveHold is how long every slot must stay held on open transactions
// before that is reported: two commit intervals, at least a second.
func (k *core) starveHold() time.Duration {
	return max(2*k.conf.commitInterval, time.Second)
}

// starved reports whether every WriteBatch slot is held on open source
// transactions with nothing else under way that could end the wait.
func (k *core) starved() bool {
	if k.held < k.conf.maxInFlight || k.committable > 0 {
		return false
	}
	if len(k.progressWait) > 0 {
		// Waiting for a progress read, which reports its own errors.
		return false
	}
	for _, sq := range k.seqs {
		if len(sq.pending) > 0 {
			// Waiting for a sequence gap, which is reported on its own.
			return false
		}
	}
	for _, q := range k.dbs {
		if len(q.queue) > 0 || q.busy || q.committing > 0 {
			return false
		}
	}
	for _, p := range k.parts {
		if p.stalled != nil || len(p.parked) > 0 {
			// A stalled partition holds its calls until it is fenced or
			// the poison is dealt with, and is reported on its own
			// (starrocks_txn_stalled_partition): raising max_in_flight
			// would not help. Parked messages are poisoned after
			// sequence_gap_timeout.
			return false
		}
	}
	return true
}

func (k *core) updateGauges() {
	k.fx.gauge(gaugeBuffered, k.buffered, "")
	// The set of regions is kept between ticks (emptied, not made anew) and
	// keyed by a struct: a tick walks every live transaction.
	if k.regionScratch == nil {
		k.regionScratch = map[regionKey]struct{}{}
	}
	regions := k.regionScratch
	clear(regions)
	for _, p := range k.parts {
		for _, t := range p.active {
			addRegions(regions, p.key, t)
		}
		if p.open != nil {
			addRegions(regions, p.key, p.open)
		}
	}
	k.fx.gauge(gaugeOpenRegions, int64(len(regions)), "")
	n := 0
	for _, p := range k.parts {
		if p.stalled != nil {
			n++
		}
	}
	k.fx.gauge(gaugeStalledPartitions, int64(n), "")
}

// regionKey is one region: a (partition, database, table).
type regionKey struct {
	p         pkey
	db, table string
}

// addRegions adds the regions t has rows in to regions.
func addRegions(regions map[regionKey]struct{}, p pkey, t *srcTxn) {
	for _, tbl := range t.tables {
		regions[regionKey{p: p, db: t.db, table: tbl}] = struct{}{}
	}
}

const (
	// sourceIdle is how long a seq source (an assembler instance) sends
	// nothing before it is forgotten, with its partitions' states, once
	// nothing of it is pending, held or live. A new assembler instance (a
	// restarted stream) is a new seq source, so without this the states of
	// the old ones would stay forever.
	sourceIdle = 30 * time.Minute
	// maxRetiredSources bounds the forgotten sources whose next seq is
	// kept, so that one that sends again goes on in order.
	maxRetiredSources = 1024
)

// prune forgets the seq sources idle for k.sourceIdle with nothing
// pending, held or live in any of their partitions, and those partitions'
// states. Their next seq is kept in retiredSeqs (the newest
// maxRetiredSources of them): a source that sends again goes on where it
// stopped; its partitions start a new state (the offset high-water mark
// with it).
func (k *core) prune(now time.Time) {
	if now.Sub(k.lastPrune) < min(reportEvery, k.sourceIdle) {
		return
	}
	k.lastPrune = now
	for _, src := range sortedKeys(k.seqs) {
		s := k.seqs[src]
		if !s.idle(now, k.sourceIdle) {
			continue
		}
		quiet := true
		for key, p := range k.parts {
			if key.source == src && !p.quiescent() {
				quiet = false
				break
			}
		}
		if !quiet {
			continue
		}
		for key := range k.parts {
			if key.source == src {
				delete(k.parts, key)
			}
		}
		delete(k.seqs, src)
		k.retiredSeqs.put(src, s.next)
		k.fx.logf(logDebug, "", "Forgot the idle seq source %q (next seq %d)", src, s.next)
	}
}

// retiredSources keeps the next seq of forgotten seq sources, the newest
// maxRetiredSources of them.
type retiredSources struct {
	next  map[string]int64
	order []string
}

func (r *retiredSources) put(src string, next int64) {
	if r.next == nil {
		r.next = map[string]int64{}
	}
	if _, ok := r.next[src]; !ok {
		r.order = append(r.order, src)
	}
	r.next[src] = next
	for len(r.order) > maxRetiredSources {
		delete(r.next, r.order[0])
		r.order = r.order[1:]
	}
}

func (r *retiredSources) take(src string) (int64, bool) {
	next, ok := r.next[src]
	if ok {
		delete(r.next, src)
		for i, s := range r.order {
			if s == src {
				r.order = append(r.order[:i], r.order[i+1:]...)
				break
			}
		}
	}
	return next, ok
}
