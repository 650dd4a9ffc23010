package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// heapAtPeak takes the heap profiles of --heapprofile for one row: one
// after the row's settle (its base: the in-process Kafka, the emulator and
// what earlier rows left) and one at the row's peak of records in flight,
// so that `go tool pprof -base <start> <peak>` shows what the records in
// flight hold, by the code that allocated it.
//
// A heap profile describes the heap as the last completed garbage
// collection found it, so each candidate profile forces one (runtime.GC):
// the row's CPU and GC figures are disturbed, and a row profiled so is for
// reading the profile, not its timings. Candidates are taken when the
// records in flight pass the last candidate's count by a twentieth (from
// minProfiledInFlight on), at most one every quarter of a second; the one
// with the most records in flight is kept.
type heapAtPeak struct {
	prefix, slug string

	mu   sync.Mutex
	base []byte
	// baseLive is the live heap at the base.
	baseLive int64
	best     []byte
	// bestInFlight is the records the best candidate's collection may
	// have found in flight, bestLive the live heap it found.
	bestInFlight, bestLive int64
	lastAt                 time.Time
	lastInFlight           int64
}

// heapProfileRate is runtime.MemProfileRate with --heapprofile: one
// sample per 4 KiB allocated on average, against the default 512 KiB.
const heapProfileRate = 4096

// minProfiledInFlight is the fewest records in flight a candidate profile
// is taken at: below it the base's noise would dominate.
const minProfiledInFlight = 1000

// newHeapAtPeak returns nil when prefix is empty (no profiles).
func newHeapAtPeak(prefix, slug string) *heapAtPeak {
	if prefix == "" {
		return nil
	}
	return &heapAtPeak{prefix: prefix, slug: slug}
}

// takeBase profiles the heap now; the row's settle has just collected it.
func (h *heapAtPeak) takeBase() error {
	if h == nil {
		return nil
	}
	runtime.GC()
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		return fmt.Errorf("taking the base heap profile: %w", err)
	}
	h.mu.Lock()
	h.base, h.baseLive = b.Bytes(), readLiveHeap()
	h.mu.Unlock()
	return nil
}

// offer is told of a new peak of records in flight (counts reads the
// records read and acknowledged so far); it takes a candidate profile when the peak passed the last
// candidate's by a twentieth and a quarter of a second went by since.
func (h *heapAtPeak) offer(peak int64, counts func() (read, acked int64)) {
	if h == nil {
		return
	}
	h.mu.Lock()
	due := peak >= minProfiledInFlight && peak >= h.lastInFlight+h.lastInFlight/20+1 && time.Since(h.lastAt) >= time.Second/4
	h.mu.Unlock()
	if !due {
		return
	}
	_, ackedBefore := counts()
	runtime.GC()
	readAfter, _ := counts()
	// What the collection may have found live: every record read before
	// it ended and not acknowledged before it began (a record read
	// meanwhile is allocated live, one acknowledged meanwhile was marked).
	n, live := readAfter-ackedBefore, readLiveHeap()
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastAt, h.lastInFlight = time.Now(), peak
	if n > h.bestInFlight {
		h.best, h.bestInFlight, h.bestLive = b.Bytes(), n, live
	}
}

// write writes the base to <prefix>-<row>-start.pprof and the peak to
// <prefix>-<row>.pprof, and returns a line saying what the peak held.
func (h *heapAtPeak) write() (string, error) {
	if h == nil {
		return "", nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	start, peak := profileName(h.prefix, h.slug+"-start"), profileName(h.prefix, h.slug)
	if err := os.WriteFile(start, h.base, 0o644); err != nil {
		return "", fmt.Errorf("writing the base heap profile: %w", err)
	}
	if h.best == nil {
		return fmt.Sprintf("heap profile: no peak of records in flight was profiled (base in %s)", start), nil
	}
	if err := os.WriteFile(peak, h.best, 0o644); err != nil {
		return "", fmt.Errorf("writing the peak heap profile: %w", err)
	}
	return fmt.Sprintf("heap profile at %d records in flight: live heap %.1f MiB over the base's %.1f MiB, %.0f B per record in flight (go tool pprof -sample_index=inuse_space -base %s %s)",
		h.bestInFlight, float64(h.bestLive)/(1<<20), float64(h.baseLive)/(1<<20),
		float64(h.bestLive-h.baseLive)/float64(h.bestInFlight), start, peak), nil
}
