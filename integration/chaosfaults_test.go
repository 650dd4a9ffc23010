package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// The chaos test's faults: every outcome of every request the output makes
// (ARCHITECTURE.md §4.4, the emulator's fault API), FE restarts and label
// evictions. The injector serves one fault (or one trigger and its fault)
// at a time, so the emulator's FaultsFired counter tells exactly which ones
// fired.

// chaosFault is one entry of the catalogue.
type chaosFault struct {
	// kind names the fault in the counts: "<op> <action>".
	kind string
	// class is the outcome: refused, reset, reply_lost, reply_late
	// (under or over request_timeout), no_answer, slow, redirect,
	// commit_late, fe_restart, eviction.
	class string
	// faults are added together; with a trigger (a fault that makes the
	// output send the request the real fault is for, e.g. a refused load
	// that makes it roll back) the trigger comes first.
	faults []emulator.Fault
	// trigger is set when faults[0] only provokes faults[1].
	trigger bool
	// after runs once every fault fired (label eviction after a lost
	// commit reply); alone runs instead of faults (FE restart).
	after func(e *emulator.Emulator)
	alone func(e *emulator.Emulator)
}

// chaosRequestTimeout is the output's request_timeout in the chaos
// pipelines (pipelineYAML, dbzWorld.yaml): reply_late below and above it.
const chaosRequestTimeout = 3 * time.Second

// outputStatements matches the statements the output sends over the MySQL
// port (progress and writer rows, table models, databases), and none of the
// test's own reads.
const outputStatements = `starrocks_txn_progress|information_schema`

func chaosCatalogue(mysql bool) []chaosFault {
	var cat []chaosFault
	add := func(class string, f emulator.Fault, trigger *emulator.Fault) {
		kind := fmt.Sprintf("%s %s", f.Op, f.Action)
		switch {
		case f.Action == emulator.ActHTTPError:
			kind += fmt.Sprintf(" %d", f.HTTPCode)
		case f.Action == emulator.ActSQLError:
			kind += fmt.Sprintf(" %d", f.Code)
		case f.Action == emulator.ActReplyLate && f.Delay > chaosRequestTimeout:
			kind += " past request_timeout"
		case f.Action == emulator.ActReplyLate:
			kind += " within request_timeout"
		}
		cf := chaosFault{kind: kind, class: class, faults: []emulator.Fault{f}}
		if trigger != nil {
			cf.faults = []emulator.Fault{*trigger, f}
			cf.trigger = true
		}
		cat = append(cat, cf)
	}
	// Outcomes every HTTP operation can have.
	outcomes := func(op emulator.Op, trigger *emulator.Fault) {
		add("refused", emulator.Fault{Op: op, Action: emulator.ActInternalError}, trigger)
		add("refused", emulator.Fault{Op: op, Action: emulator.ActHTTPError, HTTPCode: 503}, trigger)
		add("reset", emulator.Fault{Op: op, Action: emulator.ActReset}, trigger)
		add("reply_lost", emulator.Fault{Op: op, Action: emulator.ActReplyLost}, trigger)
		add("reply_late", emulator.Fault{Op: op, Action: emulator.ActReplyLate, Delay: time.Second}, trigger)
		add("reply_late", emulator.Fault{Op: op, Action: emulator.ActReplyLate, Delay: chaosRequestTimeout + time.Second}, trigger)
		add("no_answer", emulator.Fault{Op: op, Action: emulator.ActNoAnswer}, trigger)
		add("slow", emulator.Fault{Op: op, Action: emulator.ActDelay, Delay: 1500 * time.Millisecond}, trigger)
		add("redirect", emulator.Fault{Op: op, Action: emulator.ActRedirect}, trigger)
	}
	for _, op := range []emulator.Op{emulator.OpBegin, emulator.OpLoad, emulator.OpCommit} {
		outcomes(op, nil)
	}
	add("refused", emulator.Fault{Op: emulator.OpBegin, Action: emulator.ActRunningTxnLimit}, nil)
	add("refused", emulator.Fault{Op: emulator.OpBegin, Action: emulator.ActLabelAlreadyExists}, nil)
	add("refused", emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActTxnInProcessing, Count: 2}, nil)
	add("refused", emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActRunningTxnLimit}, nil)
	add("refused", emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActTxnNotExists}, nil)
	add("refused", emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActTxnNotExists}, nil)
	add("refused", emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitAbort}, nil)
	add("reply_lost", emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitReportFailure}, nil)
	add("commit_late", emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActCommitLate, Delay: 1200 * time.Millisecond}, nil)

	// Rollbacks follow a refused load; label-state polls follow a commit
	// whose reply was lost.
	rollbackTrigger := emulator.Fault{Op: emulator.OpLoad, Action: emulator.ActInternalError}
	outcomes(emulator.OpRollback, &rollbackTrigger)
	add("slow", emulator.Fault{Op: emulator.OpRollback, Action: emulator.ActAbortPending, Delay: time.Second}, &rollbackTrigger)
	stateTrigger := emulator.Fault{Op: emulator.OpCommit, Action: emulator.ActReplyLost}
	outcomes(emulator.OpGetLoadState, &stateTrigger)

	if mysql {
		sql := func(class string, f emulator.Fault) {
			f.Op, f.Statement = emulator.OpMySQL, outputStatements
			add(class, f, nil)
		}
		sql("refused", emulator.Fault{Action: emulator.ActSQLError, Code: 1064})
		sql("refused", emulator.Fault{Action: emulator.ActSQLError, Code: 1105, Message: "Backend node not found. Check if any backend node is down."})
		sql("reset", emulator.Fault{Action: emulator.ActReset})
		sql("reply_lost", emulator.Fault{Action: emulator.ActReplyLost})
		sql("reply_late", emulator.Fault{Action: emulator.ActReplyLate, Delay: time.Second})
		sql("reply_late", emulator.Fault{Action: emulator.ActReplyLate, Delay: chaosRequestTimeout + time.Second})
		sql("no_answer", emulator.Fault{Action: emulator.ActNoAnswer, Delay: 2 * chaosRequestTimeout})
		sql("slow", emulator.Fault{Action: emulator.ActDelay, Delay: 1500 * time.Millisecond})
	}

	// The outcomes that have broken promises before weigh double.
	for _, k := range []string{"load reply_lost", "load reply_late past request_timeout", "load no_answer",
		"commit reply_lost", "commit no_answer", "commit commit_late"} {
		for _, f := range cat {
			if f.kind == k {
				cat = append(cat, f)
				break
			}
		}
	}
	// Whole-server events.
	cat = append(cat,
		chaosFault{kind: "FE restart", class: "fe_restart", alone: func(e *emulator.Emulator) { e.Restart() }},
		chaosFault{kind: "evict finished labels", class: "eviction", alone: func(e *emulator.Emulator) { e.EvictLabels("") }},
		// StarRocks evicts finished labels by count: a commit whose reply
		// was lost can then be UNKNOWN for ever.
		chaosFault{kind: "commit reply_lost, label evicted", class: "eviction",
			faults: []emulator.Fault{{Op: emulator.OpCommit, Action: emulator.ActCommitReplyLost}},
			after:  func(e *emulator.Emulator) { e.EvictLabels("") }},
	)
	cat = append(cat, cat[len(cat)-1])
	return cat
}

// faultCounts counts injected faults by kind and class.
type faultCounts struct {
	mu      sync.Mutex
	fired   map[string]int64 // kind → fired
	expired map[string]int64 // kind → added but never hit (the output sent no such request in time)
	classes map[string]int64 // class → fired
}

func newFaultCounts() *faultCounts {
	return &faultCounts{fired: map[string]int64{}, expired: map[string]int64{}, classes: map[string]int64{}}
}

func (c *faultCounts) record(f chaosFault, fired bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fired {
		c.fired[f.kind]++
		c.classes[f.class]++
	} else {
		c.expired[f.kind]++
	}
}

func (c *faultCounts) merge(o *faultCounts) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range o.fired {
		c.fired[k] += n
	}
	for k, n := range o.expired {
		c.expired[k] += n
	}
	for k, n := range o.classes {
		c.classes[k] += n
	}
}

func (c *faultCounts) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, v := range c.fired {
		n += v
	}
	return n
}

// summary lists the classes, then every kind with fired/expired counts.
func (c *faultCounts) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var classes, kinds []string
	for k := range c.classes {
		classes = append(classes, k)
	}
	for k := range c.fired {
		kinds = append(kinds, k)
	}
	for k := range c.expired {
		if _, ok := c.fired[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(classes)
	slices.Sort(kinds)
	s := "faults fired by outcome:"
	for _, k := range classes {
		s += fmt.Sprintf(" %s %d,", k, c.classes[k])
	}
	s += "\nby kind (fired / never hit in time):"
	for _, k := range kinds {
		s += fmt.Sprintf("\n  %-48s %4d / %d", k, c.fired[k], c.expired[k])
	}
	return s
}

// expireAfter is how many HTTP requests the output may send while a
// catalogue entry waits before it counts as never hit: about five commit
// cycles (a begin, a load per table and the progress or writer rows, a
// commit).
const expireAfter = 25

// injector serves the catalogue at random.
type injector struct {
	em     *emulator.Emulator
	cat    []chaosFault
	rng    *rand.Rand
	gap    [2]time.Duration
	wait   time.Duration
	counts *faultCounts
}

// run serves the catalogue at random until ctx ends. After a fault that
// fired, the next waits until StarRocks committed a
// transaction again: faults that wait for their request (inject) would
// otherwise hit nearly every request, and a commit cycle, which replays
// whole after any of them, would never get through — a livelock of the test.
// A fault the output cannot recover from stops the commits, and the stall
// watchdog reports it.
func (in *injector) run(ctx context.Context) {
	defer in.em.Faults().Clear()
	for ctx.Err() == nil {
		if !sleepCtx(ctx, in.gap[0]+time.Duration(in.rng.Int64N(int64(in.gap[1]-in.gap[0])))) {
			return
		}
		committed := in.em.Counters().Committed
		if !in.inject(ctx, in.cat[in.rng.IntN(len(in.cat))]) {
			continue
		}
		for in.em.Counters().Committed == committed {
			if !sleepCtx(ctx, 10*time.Millisecond) {
				return
			}
		}
	}
}

// inject serves one catalogue entry, records whether its fault fired and
// reports it.
func (in *injector) inject(ctx context.Context, f chaosFault) bool {
	if f.alone != nil {
		f.alone(in.em)
		in.counts.record(f, true)
		return true
	}
	before := in.em.Counters().FaultsFired
	for _, fl := range f.faults {
		if err := in.em.Faults().Add(fl); err != nil {
			panic(fmt.Sprintf("chaos catalogue entry %q: %v", f.kind, err))
		}
	}
	want := int64(0)
	for _, fl := range f.faults {
		want += int64(max(fl.Count, 1))
	}
	// The entry waits for the requests it is for: it expires once the
	// output sent expireAfter HTTP requests without hitting it (its request
	// is not coming now: a MySQL statement sent at start-up only, a trigger
	// whose follow-up did not come), or after in.wait when the output sends
	// nothing (the stall watchdog reports a world that stopped). Counted in
	// requests, a loaded machine, whose pipelines send fewer per second,
	// gets the faults hit as often as a quiet one.
	requests := func() int64 {
		c := in.em.Counters()
		return c.Begins + c.Loads + c.Commits + c.Rollbacks + c.LabelStates
	}
	from, deadline := requests(), time.Now().Add(in.wait)
	for ctx.Err() == nil && time.Now().Before(deadline) && requests()-from < expireAfter && len(in.em.Faults().Pending()) > 0 {
		// A fine poll in real time: the expiry counts requests, and a
		// coarser one would let later requests hit an expired entry.
		time.Sleep(5 * time.Millisecond)
	}
	in.em.Faults().Clear()
	fired := in.em.Counters().FaultsFired - before
	// An entry counts when its fault fired (the counter also sees one hit
	// between the snapshot and the clear); with a trigger, when both did.
	ok := fired > 0
	if f.trigger {
		ok = fired >= want
	}
	in.counts.record(f, ok)
	if ok && f.after != nil {
		f.after(in.em)
	}
	return ok
}

// sleepCtx sleeps d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
