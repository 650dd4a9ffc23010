package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The chaos test's pipelines: a main member that is crashed, killed or
// restarted at random, and a second member of the same consumer group that
// joins and leaves (a rebalance each way). Dead pipelines are dropped, not
// kept until the end of the test, so a long run holds only the live ones
// (and the last lines of the logs of the last few that died).

// fleet owns the running pipelines of one chaos run.
type fleet struct {
	t     *testing.T
	r     *rig
	yaml  func() string
	ctr   *lifeCounts
	fails func(format string, args ...any)

	// closing waits for the streams of retired pipelines to return.
	closing sync.WaitGroup

	mu   sync.Mutex
	a, b *pipeline
	n    int
	// gone holds what the dead pipelines committed and the tails of the
	// logs of the last ones.
	goneCommitted int64
	tails         []string
}

// lifeCounts counts the lifecycle events.
type lifeCounts struct {
	crashes, kills, restarts, joins, leaves, standbyCrashes atomic.Int64
}

func (l *lifeCounts) rebalances() int64 {
	return l.joins.Load() + l.leaves.Load() + l.standbyCrashes.Load()
}

func (f *fleet) launch(role string) (*pipeline, error) {
	f.mu.Lock()
	f.n++
	name := fmt.Sprintf("%s-%d", role, f.n)
	f.mu.Unlock()
	return launch(name, f.yaml())
}

// startMain starts the first main member.
func (f *fleet) startMain() error {
	p, err := f.launch("a")
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.a = p
	f.mu.Unlock()
	return nil
}

// retire records a pipeline that is gone.
func (f *fleet) retire(p *pipeline) {
	f.closing.Add(1)
	go func() {
		defer f.closing.Done()
		<-p.done
	}()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.goneCommitted += p.metrics.Counter("starrocks_txn_source_txns_committed")
	f.tails = append(f.tails, fmt.Sprintf("pipeline %s:\n%s", p.name, p.logs.tail(25)))
	if len(f.tails) > 6 {
		f.tails = f.tails[1:]
	}
}

// committed is what every pipeline of the run committed so far
// (starrocks_txn_source_txns_committed).
func (f *fleet) committed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.goneCommitted
	for _, p := range []*pipeline{f.a, f.b} {
		if p != nil {
			n += p.metrics.Counter("starrocks_txn_source_txns_committed")
		}
	}
	return n
}

// live returns the running pipelines.
func (f *fleet) live() []*pipeline {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ps []*pipeline
	for _, p := range []*pipeline{f.a, f.b} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// gracefulStopBound is how long a graceful stop may take: the output's
// Close waits up to 30 s for a commit in flight (ARCHITECTURE.md §4.5; a
// commit to a StarRocks that does not answer runs out of its grown call
// bound), and the input and the pipeline drain before it.
const gracefulStopBound = 45 * time.Second

// stopGracefully stops p within gracefulStopBound; when it does not, the
// error carries the pipeline's last log lines, which say what it waited for.
func stopGracefully(p *pipeline) error {
	p.stopped = true
	start := time.Now()
	err := p.stream.StopWithin(gracefulStopBound)
	p.cancel()
	if err != nil {
		return fmt.Errorf("pipeline %s did not stop gracefully within %s: %w; its last log lines:\n%s",
			p.name, gracefulStopBound, err, p.logs.tail(30))
	}
	if d := time.Since(start); d > 15*time.Second {
		fmt.Printf("pipeline %s took %s to stop gracefully\n", p.name, d.Round(time.Millisecond))
	}
	return nil
}

// step runs one random lifecycle event.
func (f *fleet) step(rng *rand.Rand) {
	f.mu.Lock()
	a, b := f.a, f.b
	f.mu.Unlock()
	ops := []string{"crash", "crash", "kill"}
	// The first event kills the main member, so that every run, however
	// few events a loaded machine leaves time for, has one.
	if f.ctr.crashes.Load()+f.ctr.kills.Load() > 0 {
		ops = append(ops, "restart")
		if b == nil {
			ops = append(ops, "join", "join")
		} else {
			ops = append(ops, "leave", "crash standby")
		}
	}
	switch op := ops[rng.IntN(len(ops))]; op {
	case "crash", "kill", "restart":
		switch op {
		case "crash":
			f.r.crash(a)
			f.ctr.crashes.Add(1)
		case "kill":
			a.kill()
			f.ctr.kills.Add(1)
		case "restart":
			if err := stopGracefully(a); err != nil {
				f.fails("%v", err)
			}
			f.ctr.restarts.Add(1)
		}
		f.retire(a)
		next, err := f.launch("a")
		if err != nil {
			f.fails("restarting the main pipeline: %v", err)
			return
		}
		f.mu.Lock()
		f.a = next
		f.mu.Unlock()
	case "join":
		p, err := f.launch("b")
		if err != nil {
			f.fails("starting the second pipeline: %v", err)
			return
		}
		f.mu.Lock()
		f.b = p
		f.mu.Unlock()
		f.ctr.joins.Add(1)
	case "leave", "crash standby":
		if op == "leave" {
			if err := stopGracefully(b); err != nil {
				f.fails("%v", err)
			}
			f.ctr.leaves.Add(1)
		} else {
			f.r.crash(b)
			f.ctr.standbyCrashes.Add(1)
		}
		f.retire(b)
		f.mu.Lock()
		f.b = nil
		f.mu.Unlock()
	}
}

// run steps at random until ctx ends. Every event after the first (a kill,
// see step) waits for the random gap and then for the pipelines to have
// committed a source transaction since the event before: on a loaded
// machine a restarted member can take longer than the gap to join, read the
// progress and commit, and events paced by the clock alone then kill every
// member before it commits anything — a livelock of the test, not of the
// product. A world that stops committing is the stall watchdog's to report.
func (f *fleet) run(ctx context.Context, rng *rand.Rand, gap [2]time.Duration) {
	first := true
	for {
		since := f.committed()
		if !sleepCtx(ctx, gap[0]+time.Duration(rng.Int64N(int64(gap[1]-gap[0])))) {
			return
		}
		for !first && f.committed() == since {
			if !sleepCtx(ctx, 50*time.Millisecond) {
				return
			}
		}
		first = false
		f.step(rng)
	}
}

// stopAll stops the live pipelines gracefully, failing on an error.
func (f *fleet) stopAll() {
	for _, p := range f.live() {
		if err := stopGracefully(p); err != nil {
			f.fails("%v", err)
		}
		f.retire(p)
	}
	f.mu.Lock()
	f.a, f.b = nil, nil
	f.mu.Unlock()
}

// killAll is the cleanup: every live pipeline stopped hard, and every
// stream returned.
func (f *fleet) killAll() {
	for _, p := range f.live() {
		if !p.stopped {
			p.kill()
		}
		f.retire(p)
	}
	f.closing.Wait()
}

// logTails returns the last log lines of the live and the last dead
// pipelines.
func (f *fleet) logTails() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := ""
	for _, t := range f.tails {
		s += t + "\n"
	}
	for _, p := range []*pipeline{f.a, f.b} {
		if p != nil {
			s += fmt.Sprintf("pipeline %s (live):\n%s\n", p.name, p.logs.tail(40))
		}
	}
	return s
}

// fullLogs returns the whole logs of the live pipelines and the tails of the
// last dead ones.
func (f *fleet) fullLogs() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, t := range f.tails {
		b.WriteString(t + "\n")
	}
	for _, p := range []*pipeline{f.a, f.b} {
		if p != nil {
			fmt.Fprintf(&b, "pipeline %s (live):\n%s\n", p.name, p.logs.String())
		}
	}
	return b.String()
}
