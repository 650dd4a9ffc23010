package starrocks_txn

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// What a stop waits for, said once when it begins (README.md: "Graceful stop
// with open source transactions"). Benthos tells an
// output nothing before it closes it: on SIGTERM or SIGINT its graceful stop
// waits, at most three quarters of shutdown_timeout, for every message in
// flight to be acknowledged, and those the output holds (a stalled
// partition, a source transaction without its END) never are. The binary
// marks the signal (internal/shutdown); the output then names what it holds
// and how long the stop may wait. Close names the commits it waits for
// (output.go: awaitCommits).

// stopWaitLoop logs, once, what the process's stop waits for when it is
// asked to stop (o.stopping) while the output holds WriteBatch calls.
func (o *Output) stopWaitLoop() {
	defer o.wg.Done()
	select {
	case <-o.ctx.Done():
		return
	case <-o.stopping:
	}
	o.mu.Lock()
	w := o.core.stopWaits()
	o.mu.Unlock()
	if w.calls == 0 {
		return
	}
	msg := fmt.Sprintf("The process is stopping and %d WriteBatch calls of this output are not acknowledged yet: Benthos's graceful stop waits for them at most three quarters of shutdown_timeout (15s with the default 20s, 33.75s with the shipped configs' 45s), then closes the output without acknowledging them (their messages are read again after a restart). Waiting for: %s",
		w.calls, strings.Join(w.what, "; "))
	if w.stuck {
		o.log.Warn(msg)
	} else {
		o.log.Info(msg)
	}
}

// stopWait is what a stop waits for (core.stopWaits): the WriteBatch calls
// in flight and, in words, what holds them; stuck when some of it does not
// resolve by itself (a stall, a source transaction whose END does not come
// once the input stopped reading).
type stopWait struct {
	calls int
	what  []string
	stuck bool
}

// stopWaits describes what holds the WriteBatch calls in flight.
func (k *core) stopWaits() stopWait {
	w := stopWait{calls: k.waiting}
	keys := make([]pkey, 0, len(k.parts))
	for key := range k.parts {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	var stalled, open, gated []string
	for _, key := range keys {
		p := k.parts[key]
		if p.stalled != nil {
			stalled = append(stalled, fmt.Sprintf("%s at source transaction %q", key, p.stalledTxn))
		}
		if p.open != nil {
			open = append(open, fmt.Sprintf("%s (source transaction %q)", key, p.open.id))
		}
		if len(p.gated) > 0 {
			gated = append(gated, key.String())
		}
	}
	if len(stalled) > 0 {
		w.stuck = true
		w.what = append(w.what, fmt.Sprintf("stalled partitions %s, which no stop resolves (set dead_letter, or fix the cause)", strings.Join(stalled, ", ")))
	}
	if len(open) > 0 {
		w.stuck = true
		w.what = append(w.what, fmt.Sprintf("the END of open source transactions of partitions %s, which the stopped input no longer reads", strings.Join(open, ", ")))
	}
	if len(gated) > 0 {
		w.what = append(w.what, fmt.Sprintf("schema checks of partitions %s", strings.Join(gated, ", ")))
	}
	if n := len(k.dlQueued()); n > 0 {
		w.what = append(w.what, fmt.Sprintf("%d source transactions on their way to dead_letter", n))
	}
	if len(k.inFlight) > 0 {
		w.what = append(w.what, fmt.Sprintf("the commits of labels %s", strings.Join(sortedKeys(k.inFlight), ", ")))
	}
	if k.committable > 0 {
		w.what = append(w.what, fmt.Sprintf("%d complete source transactions, committed within commit_interval (%v)", k.committable, k.conf.commitInterval))
	}
	if len(k.progressLoading) > 0 {
		w.what = append(w.what, fmt.Sprintf("reads of the progress of partitions %s", strings.Join(sortedKeys(k.progressLoading), ", ")))
	}
	if len(w.what) == 0 {
		w.what = append(w.what, "messages being admitted")
	}
	return w
}

// closeWaitBound is how long Close waits at most for commits in flight:
// closeCommitWait, or less when ctx's deadline comes first.
func closeWaitBound(deadline time.Time, hasDeadline bool, now time.Time) time.Duration {
	bound := closeCommitWait
	if hasDeadline {
		if d := deadline.Sub(now); d < bound {
			bound = max(d, 0)
		}
	}
	return bound
}
