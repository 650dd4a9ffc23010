package integration

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/goleak"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// The chaos test's figures: per run and in total, and the heap over time.

// chaosRun holds one run's figures.
type chaosRun struct {
	name                 string
	faults               *faultCounts
	life                 *lifeCounts
	sourceTxns, aborted  int64
	dups, splits, rounds int64
	converged, caughtUp  time.Duration
	emulator             emulator.Counters
	failed               bool
}

func (r *chaosRun) summary() string {
	c := r.emulator
	verdict := "passed"
	if r.failed {
		verdict = "FAILED"
	}
	return fmt.Sprintf("%s (%s): %d source transactions committed at the source, %d aborted; %d faults fired (%s); "+
		"%d crashes, %d kills, %d graceful restarts, %d joins, %d leaves, %d standby crashes; "+
		"%d duplicated events, %d torn reads in %d reader rounds; tables equal the model %v and offsets at the end %v after the faults stopped; "+
		"emulator: %d begins, %d loads, %d commits (%d committed, %d aborted), %d rollbacks, %d label-state polls",
		r.name, verdict, r.sourceTxns, r.aborted, r.faults.total(), strings.ReplaceAll(r.faults.summary(), "\n", "; "),
		r.life.crashes.Load(), r.life.kills.Load(), r.life.restarts.Load(), r.life.joins.Load(), r.life.leaves.Load(), r.life.standbyCrashes.Load(),
		r.dups, r.splits, r.rounds, r.converged.Round(100*time.Millisecond), r.caughtUp.Round(100*time.Millisecond),
		c.Begins, c.Loads, c.Commits, c.Committed, c.Aborted, c.Rollbacks, c.LabelStates)
}

// chaosTotals adds the runs up.
type chaosTotals struct {
	mu     sync.Mutex
	runs   []*chaosRun
	faults *faultCounts
	live   []func() int64
	// inChaos counts the runs in their chaos phase (the heap trend is
	// taken while all are).
	inChaos atomic.Int64
}

func newChaosTotals() *chaosTotals { return &chaosTotals{faults: newFaultCounts()} }

// track counts a run's source transactions in the heap samples.
func (c *chaosTotals) track(produced func() int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = append(c.live, produced)
}

func (c *chaosTotals) sourceTxns() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, f := range c.live {
		n += f()
	}
	return n
}

func (c *chaosTotals) add(r *chaosRun) {
	c.faults.merge(r.faults)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs = append(c.runs, r)
}

func (c *chaosTotals) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var txns, aborted, dups, dupsEO, splits, rounds, crashes, kills, restarts, rebalances, feRestarts int64
	var b strings.Builder
	for _, r := range c.runs {
		txns += r.sourceTxns
		aborted += r.aborted
		dups += r.dups
		if strings.HasSuffix(r.name, "exactly_once") {
			dupsEO += r.dups
		}
		splits += r.splits
		rounds += r.rounds
		crashes += r.life.crashes.Load() + r.life.standbyCrashes.Load()
		kills += r.life.kills.Load()
		restarts += r.life.restarts.Load()
		rebalances += r.life.rebalances()
		fmt.Fprintf(&b, "  %-24s %6d source txns, %4d faults, %3d crashes+kills, %3d rebalances, %5d duplicated events, %d splits\n",
			r.name, r.sourceTxns, r.faults.total(), r.life.crashes.Load()+r.life.standbyCrashes.Load()+r.life.kills.Load(), r.life.rebalances(), r.dups, r.splits)
	}
	c.faults.mu.Lock()
	feRestarts = c.faults.fired["FE restart"]
	c.faults.mu.Unlock()
	return fmt.Sprintf("%d runs: %d source transactions committed at the source (%d aborted), %d faults fired (%d FE restarts), "+
		"%d pipeline crashes, %d kills, %d graceful pipeline restarts, %d rebalances (a member joining or leaving); "+
		"duplicated events: %d with exactly_once, %d with at_least_once; splits (torn reads): %d in %d reader rounds\n%s%s",
		len(c.runs), txns, aborted, c.faults.total(), feRestarts, crashes, kills, restarts, rebalances, dupsEO, dups-dupsEO, splits, rounds,
		b.String(), c.faults.summary())
}

// heapSample is the heap in use after a GC, at a time.
type heapSample struct {
	at         time.Duration
	heap       uint64
	goroutines int
	// pipelines is the part of heap allocated by the pipelines (the
	// plugins, Benthos, the Kafka clients), not by the emulator, the Kafka
	// cluster or the test: what a leak in the product would grow.
	pipelines uint64
	txns      int64
	inChaos   int64
	// took is how long the sample took (the GC and the profile).
	took time.Duration
}

// productFrame and harnessFrame classify the allocation sites of a heap
// profile: an allocation counts for the pipelines when its stack has a
// frame of the product (or of Benthos or franz-go's client) and none of the
// emulator, the SQL engine, kfake or the test.
var (
	productFrame = regexp.MustCompile(`benthos-starrocks/(output|input|processor|internal/(contract|registry|starrocks|kafka|jsonscan|metricscap))|redpanda-data/benthos|franz-go/pkg/kgo`)
	harnessFrame = regexp.MustCompile(`benthos-starrocks/(emulator|integration|testkit)|go-mysql-server|dolthub|franz-go/pkg/kfake|go-sql-driver`)
)

// pipelineHeap sums the in-use bytes of the heap profile's records that
// productFrame and harnessFrame give to the pipelines (the profile of the
// last GC).
func pipelineHeap() uint64 {
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 1); err != nil {
		return 0
	}
	var total uint64
	var bytesOf uint64
	product, harness := false, false
	flush := func() {
		if product && !harness {
			total += bytesOf
		}
		bytesOf, product, harness = 0, false, false
	}
	for _, line := range strings.Split(b.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			if productFrame.MatchString(line) {
				product = true
			}
			if harnessFrame.MatchString(line) {
				harness = true
			}
		case strings.Contains(line, ": ") && strings.Contains(line, " @ "):
			flush()
			// "<inuse objects>: <inuse bytes> [<alloc objects>: <alloc bytes>] @ …",
			// sampled: scaled as pprof does.
			objs, rest, ok := strings.Cut(line, ": ")
			n, _, ok2 := strings.Cut(rest, " ")
			o, err1 := strconv.ParseFloat(objs, 64)
			v, err2 := strconv.ParseFloat(n, 64)
			if ok && ok2 && err1 == nil && err2 == nil && o > 0 && v > 0 {
				rate := float64(runtime.MemProfileRate)
				bytesOf = uint64(v / (1 - math.Exp(-(v/o)/rate)))
			}
		}
	}
	flush()
	return total
}

type heapSampler struct {
	stopc   chan struct{}
	done    chan struct{}
	samples []heapSample
}

// startHeapSampler samples the heap after a GC every interval; with
// profile it also measures the pipelines' share (pipelineHeap), which
// writes and parses a whole heap profile: seconds per sample under -race on
// a loaded machine, so only the long form, which asserts it, pays for it.
func startHeapSampler(every time.Duration, profile bool, totals *chaosTotals) *heapSampler {
	h := &heapSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(h.done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			select {
			case <-h.stopc:
				return
			case <-tk.C:
			}
			// Concurrently with the readers: holding them off for a sample
			// starved them on a loaded machine (a sample waits for every
			// round in flight, and each round for the sample). Their working
			// memory is the harness's, which pipelineHeap leaves out; the
			// whole heap, only reported, includes it.
			began := time.Now()
			runtime.GC()
			if path := os.Getenv("STARROCKS_TXN_CHAOS_HEAP_PROFILE"); path != "" {
				// The latest heap profile, to see what grows (go tool pprof).
				if f, err := os.Create(path); err == nil {
					_ = pprof.WriteHeapProfile(f)
					_ = f.Close()
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			var pipelines uint64
			if profile {
				pipelines = pipelineHeap()
			}
			h.samples = append(h.samples, heapSample{at: time.Since(start), heap: ms.HeapAlloc, goroutines: runtime.NumGoroutine(),
				pipelines: pipelines, txns: totals.sourceTxns(), inChaos: totals.inChaos.Load(), took: time.Since(began)})
		}
	}()
	return h
}

func (h *heapSampler) stop() []heapSample {
	close(h.stopc)
	<-h.done
	return h.samples
}

// trend is the heap's growth while every run is in its chaos phase, after
// the first fifth of it (start-up: first pipelines, first cycles).
type trend struct {
	all, samples              []heapSample
	first, last               heapSample
	slopePerTxn, slopePerHour float64
	// pipelineSlopePerTxn is the trend of heapSample.pipelines.
	pipelineSlopePerTxn float64
}

func heapTrend(all []heapSample) trend {
	tr := trend{all: all}
	// The runs that a -run filter left.
	var runs int64
	for _, v := range all {
		runs = max(runs, v.inChaos)
	}
	var s []heapSample
	for _, v := range all {
		if runs > 0 && v.inChaos == runs {
			s = append(s, v)
		}
	}
	if len(s) < 5 {
		tr.samples = s
		return tr
	}
	tr.samples = s
	s = s[len(s)/5:]
	tr.first, tr.last = s[0], s[len(s)-1]
	// Least squares of heap over source transactions and over time.
	fitOf := func(y func(heapSample) float64, x func(heapSample) float64) float64 {
		var sx, sy, sxx, sxy float64
		for _, v := range s {
			sx += x(v)
			sy += y(v)
			sxx += x(v) * x(v)
			sxy += x(v) * y(v)
		}
		n := float64(len(s))
		d := n*sxx - sx*sx
		if d == 0 {
			return 0
		}
		return (n*sxy - sx*sy) / d
	}
	heap := func(v heapSample) float64 { return float64(v.heap) }
	txns := func(v heapSample) float64 { return float64(v.txns) }
	tr.slopePerTxn = fitOf(heap, txns)
	tr.slopePerHour = fitOf(heap, func(v heapSample) float64 { return v.at.Hours() })
	tr.pipelineSlopePerTxn = fitOf(func(v heapSample) float64 { return float64(v.pipelines) }, txns)
	return tr
}

func (tr trend) String() string {
	var took time.Duration
	for _, v := range tr.all {
		took = max(took, v.took)
	}
	if tr.last.at == 0 {
		return fmt.Sprintf("heap: %d samples (the slowest took %v), %d of them while every run was in chaos: too few for a trend",
			len(tr.all), took.Round(time.Millisecond), len(tr.samples))
	}
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	var peak uint64
	var peakG int
	for _, v := range tr.samples {
		peak, peakG = max(peak, v.heap), max(peakG, v.goroutines)
	}
	var peakP uint64
	for _, v := range tr.samples {
		peakP = max(peakP, v.pipelines)
	}
	share := "pipelines' share not measured (long form only); "
	if peakP > 0 {
		share = fmt.Sprintf("pipelines' share of the heap (allocated by the plugins, Benthos and the Kafka clients): %.1f MiB → %.1f MiB, peak %.1f MiB, trend %.0f bytes per source transaction; ",
			mib(tr.first.pipelines), mib(tr.last.pipelines), mib(peakP), tr.pipelineSlopePerTxn)
	}
	return share + fmt.Sprintf("whole heap in use after GC (%d samples while every run was in chaos): %.1f MiB at %v (%d source txns) → %.1f MiB at %v (%d source txns), peak %.1f MiB; "+
		"trend %.0f bytes per source transaction, %.1f MiB per hour; goroutines %d → %d (peak %d); the slowest sample took %v",
		len(tr.samples), mib(tr.first.heap), tr.first.at.Round(time.Second), tr.first.txns, mib(tr.last.heap), tr.last.at.Round(time.Second), tr.last.txns, mib(peak),
		tr.slopePerTxn, tr.slopePerHour/(1<<20), tr.first.goroutines, tr.last.goroutines, peakG, took.Round(time.Millisecond))
}

// chaosLeakIgnores are the goroutines that outlive every stream, emulator
// and Kafka cluster by design, each named narrowly: package-level workers
// started once per process.
func chaosLeakIgnores() []goleak.Option {
	return []goleak.Option{}
}
