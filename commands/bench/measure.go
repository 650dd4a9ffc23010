package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// usage is what the process had used at one moment: its CPU time (user and
// system, every goroutine: the in-process Kafka, the pipeline, the emulator),
// its heap allocations and the runtime's estimate of the CPU time spent in
// the garbage collector.
type usage struct {
	at          time.Time
	cpu         time.Duration
	sys         time.Duration // the system part of cpu
	minFaults   int64         // minor page faults (first touches of memory)
	allocBytes  uint64
	allocObjs   uint64
	gcCPU       float64 // seconds
	runtimeCPU  float64 // seconds, the runtime's total of the same classes
	initialized bool
}

var usageSamples = []metrics.Sample{
	{Name: "/cpu/classes/gc/total:cpu-seconds"},
	{Name: "/cpu/classes/total:cpu-seconds"},
}

var usageMu sync.Mutex

// readUsage samples the process's usage now.
func readUsage() usage {
	u := usage{at: time.Now(), initialized: true}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		u.sys, u.minFaults = time.Duration(ru.Stime.Nano()), ru.Minflt
	}
	usageMu.Lock()
	s := slices.Clone(usageSamples)
	usageMu.Unlock()
	metrics.Read(s)
	u.gcCPU = sampleFloat(s[0])
	u.runtimeCPU = sampleFloat(s[1])
	// Exact, unlike the runtime/metrics counters, which lag by what each P
	// has cached; twice per row, so its stop-the-world does not matter.
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.allocBytes, u.allocObjs = ms.TotalAlloc, ms.Mallocs
	return u
}

func sampleFloat(s metrics.Sample) float64 {
	if s.Value.Kind() == metrics.KindFloat64 {
		return s.Value.Float64()
	}
	return 0
}

// window is the usage between two samples.
type window struct {
	wall, cpu, sys       time.Duration
	minFaults            int64
	allocBytes, allocObj uint64
	// gcShare is the garbage collector's share of the runtime's CPU time
	// over the window (the runtime's own estimate, refreshed at each GC).
	gcShare float64
}

func between(a, b usage) window {
	w := window{wall: b.at.Sub(a.at), cpu: b.cpu - a.cpu, sys: b.sys - a.sys, minFaults: b.minFaults - a.minFaults}
	if b.allocBytes >= a.allocBytes {
		w.allocBytes = b.allocBytes - a.allocBytes
	}
	if b.allocObjs >= a.allocObjs {
		w.allocObj = b.allocObjs - a.allocObjs
	}
	if d := b.runtimeCPU - a.runtimeCPU; d > 0 {
		w.gcShare = (b.gcCPU - a.gcCPU) / d
	}
	return w
}

// meter is what one row records: how many input messages the pipeline read
// and how many were acknowledged, when, the read → acknowledgement latency
// of each batch, and the process's usage at the first read and at the last
// acknowledgement (the row's measured window).
type meter struct {
	want int64 // messages the run must deliver
	// rate, when positive, is the pace of the timed input in records/s;
	// paceWait is how long (ns) the pacer held batches back to keep it.
	rate     int
	paceWait atomic.Int64
	read     atomic.Int64
	batches  atomic.Int64
	acked    atomic.Int64
	nacked   atomic.Int64

	mu    sync.Mutex
	first usage
	// firstRead and lastRead are when the first and the last batch were
	// read, lastBatch the last one's messages.
	firstRead, lastRead time.Time
	lastBatch           int
	last                usage
	latencies           []latencySample
	done                chan struct{}
	doneOnce            sync.Once
}

// latencySample is one acknowledged input batch: its read → ack time and
// the number of messages it carried (the quantiles weight by messages).
type latencySample struct {
	d time.Duration
	n int
}

func newMeter(want int64) *meter {
	return &meter{want: want, done: make(chan struct{})}
}

// onRead counts a batch of n messages read at at.
func (m *meter) onRead(n int, at time.Time) {
	m.mu.Lock()
	if !m.first.initialized {
		m.first = readUsage()
		m.firstRead = at
	}
	m.lastRead, m.lastBatch = at, n
	m.mu.Unlock()
	m.read.Add(int64(n))
	m.batches.Add(1)
}

func (m *meter) onAck(n int, readAt time.Time, err error) {
	if err != nil {
		m.nacked.Add(int64(n))
		return
	}
	now := time.Now()
	total := m.acked.Add(int64(n))
	m.mu.Lock()
	m.latencies = append(m.latencies, latencySample{d: now.Sub(readAt), n: n})
	if total >= m.want && !m.last.initialized {
		m.last = readUsage()
	}
	m.mu.Unlock()
	if total >= m.want {
		m.doneOnce.Do(func() { close(m.done) })
	}
}

// measured returns the row's window; ok is false until it is complete.
func (m *meter) measured() (window, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.first.initialized || !m.last.initialized {
		return window{}, false
	}
	return between(m.first, m.last), true
}

// reads returns the time from the first read to the last, and the last
// batch's messages.
func (m *meter) reads() (span time.Duration, lastBatch int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.first.initialized {
		return 0, 0
	}
	return m.lastRead.Sub(m.firstRead), m.lastBatch
}

// startedAt is the first read, zero before it.
func (m *meter) startedAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first.at
}

// quantile returns the message-weighted q-quantile of read → ack latency.
func (m *meter) quantile(q float64) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return weightedQuantile(m.latencies, q)
}

// weightedQuantile is the nearest-rank q-quantile of samples each counted n
// times.
func weightedQuantile(s []latencySample, q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b latencySample) int { return int(a.d - b.d) })
	var total int64
	for _, x := range s {
		total += int64(x.n)
	}
	rank := int64(q * float64(total))
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for _, x := range s {
		seen += int64(x.n)
		if seen >= rank {
			return x.d
		}
	}
	return s[len(s)-1].d
}

// profiler writes a CPU profile of each row (from the start of its
// pipeline to its last acknowledgement) and an allocation profile after
// each row, named after the row, when the options ask for them.
type profiler struct {
	cpuPrefix, memPrefix string
	cpuFile              *os.File
}

// profileName is the file of one row's profile: prefix, the row's slug and
// ".pprof".
func profileName(prefix, slug string) string {
	dir, base := filepath.Split(prefix)
	return filepath.Join(dir, base+"-"+slug+".pprof")
}

func (p *profiler) start(slug string) error {
	if p.cpuPrefix == "" {
		return nil
	}
	f, err := os.Create(profileName(p.cpuPrefix, slug))
	if err != nil {
		return fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("starting the CPU profile: %w", err)
	}
	p.cpuFile = f
	return nil
}

func (p *profiler) stop(slug string) error {
	var errs []error
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		errs = append(errs, p.cpuFile.Close())
		p.cpuFile = nil
	}
	if p.memPrefix != "" {
		f, err := os.Create(profileName(p.memPrefix, slug))
		if err != nil {
			return fmt.Errorf("creating the allocation profile: %w", err)
		}
		errs = append(errs, pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
	}
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("writing a profile: %w", err)
		}
	}
	return nil
}

// slug turns a row name into a file-name part.
func slug(s string) string {
	var sb strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			sb.WriteRune(r)
			dash = false
		case !dash && sb.Len() > 0:
			sb.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(sb.String(), "-")
}

// readRSS returns the process's resident set size (VmRSS) in bytes, 0 where
// /proc is not available.
// readLiveHeap returns the heap the last garbage collection marked live
// (runtime/metrics /gc/heap/live:bytes).
func readLiveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

func readRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Bytes()
		if !bytes.HasPrefix(line, []byte("VmRSS:")) {
			continue
		}
		fields := strings.Fields(string(line[len("VmRSS:"):]))
		if len(fields) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// loadAverage returns /proc/loadavg's three figures, "" where it cannot be
// read.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " / ")
}

// cpuCount is the number of CPUs the process may use.
func cpuCount() int { return runtime.NumCPU() }
