package starrocks_txn

// The output's effects (core.go: effects): what the state machine does
// beyond its own state, carried out by the Output under Output.mu —
// goroutines, channel wake-ups, the partition registry, the log and the
// metrics.

// startWorker starts the goroutine of q's database, continuing the ledger
// of its retired worker when there is one (worker.go: retire).
func (o *Output) startWorker(q *dbQueue) {
	w := newDBWorker(o, q, o.retired[q.db])
	delete(o.retired, q.db)
	o.workers[q.db] = w
	o.wg.Add(1)
	go w.run()
}

func (o *Output) wakeWorker(q *dbQueue) {
	if w := o.workers[q.db]; w != nil {
		w.signal()
	}
}

// readProgress starts the read of a partition's progress (progress.go:
// readProgressLoop).
func (o *Output) readProgress(part string) {
	o.wg.Add(1)
	go o.readProgressLoop(part)
}

func (o *Output) wakeDeadLetter() {
	select {
	case o.dlWake <- struct{}{}:
	default:
	}
}

func (o *Output) currentEpoch(part string) uint64 { return o.reg.Epoch(part) }

func (o *Output) publishCommitted(part string, end int64) { o.reg.PublishCommitted(part, end) }

func (o *Output) callDone(c *call) { close(c.done) }

func (o *Output) logf(lvl logLevel, part string, format string, args ...any) {
	log := o.log
	if part != "" {
		log = log.With("partition", part)
	}
	switch lvl {
	case logDebug:
		log.Debugf(format, args...)
	case logInfo:
		log.Infof(format, args...)
	case logWarn:
		log.Warnf(format, args...)
	default:
		log.Errorf(format, args...)
	}
}

func (o *Output) count(c counterID, n int64, label string) {
	switch c {
	case ctrDeadLettered:
		o.m.deadLettered.Incr(n, label)
	case ctrStaleEpoch:
		o.m.staleEpoch.Incr(n, label)
	case ctrReplaysDropped:
		o.m.replaysDropped.Incr(n, label)
	case ctrPartitionStalls:
		o.m.stalledCount.Incr(n)
	case ctrLifecycleErrors:
		o.m.lifecycleErrors.Incr(n)
	case ctrSeqGaps:
		o.m.seqGaps.Incr(n)
	case ctrMaxInFlightStarved:
		o.m.mifStarved.Incr(n)
	}
}

func (o *Output) gauge(g gaugeID, v int64, label string) {
	switch g {
	case gaugeStalledPartition:
		o.m.stalled.Set(v, label)
	case gaugeStalledPartitions:
		o.m.stalledPartitions.Set(v)
	case gaugeBuffered:
		o.m.buffered.Set(v)
	case gaugeOpenRegions:
		o.m.openRegions.Set(v)
	case gaugeWaiting:
		o.m.waiting.Set(v)
	case gaugeUnresolved:
		o.m.unresolved.Set(v)
	}
}
