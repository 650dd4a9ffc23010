package bench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"time"
)

// heapAtPeak takes the heap profiles of --heapprofile for one row: one
// after the row's settle (its base: the in-process Kafka, the emulator and
// what earlier rows left) and one at the row's peak of records in flight,
// so that `go tool pprof -base <start> <peak>` shows what the records in
// flight hold, by the code that allocated it; and it sums the same
// difference by owner (owners), per record in flight.
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
	// baseSites is the base's in-use heap by allocation stack.
	baseSites map[[32]uintptr]heapUse
	best      []byte
	// bestInFlight is the records in flight when the best candidate's
	// collection was asked for, bestReadDuring the records read before it
	// ended; bestOwners its heap over the base's, by owner, and bestMsgs
	// the Benthos messages in it.
	bestInFlight   int64
	bestReadDuring int64
	bestAckDuring  int64
	bestOwners     map[string]heapUse
	bestMsgs       float64
	lastAt         time.Time
	lastInFlight   int64
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

// takeBase profiles the heap now, after a collection.
func (h *heapAtPeak) takeBase() error {
	if h == nil {
		return nil
	}
	runtime.GC()
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		return fmt.Errorf("taking the base heap profile: %w", err)
	}
	sites := heapByStack()
	h.mu.Lock()
	h.base, h.baseSites = b.Bytes(), sites
	h.mu.Unlock()
	return nil
}

// offer is told of a new peak of records in flight (counts reads the
// records read and acknowledged so far); it takes a candidate profile when
// the peak passed the last candidate's by a twentieth and a quarter of a
// second went by since.
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
	// The profile a collection publishes holds what was reachable when it
	// began and everything allocated while it marked (the collector keeps
	// those whether or not they are still needed): the records in flight
	// when it began and the records read since, which on a busy machine,
	// where runtime.GC first waits for a collection under way and marking
	// takes seconds, differ by tens of thousands (more read, or a commit's
	// worth acknowledged before it began). So the records read and
	// acknowledged during it are counted too, and the heap is divided by
	// the Benthos messages the profile holds (one per record read), not by
	// the records in flight.
	read, acked := counts()
	runtime.GC()
	readAfter, ackedAfter := counts()
	var b bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&b, 0); err != nil {
		return
	}
	sites := heapByStack()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastAt, h.lastInFlight = time.Now(), peak
	// The best candidate is the one whose profile holds the most records:
	// the most Benthos messages (a commit acknowledged while the
	// collection waited may leave a profile taken at many records in
	// flight with none of them), else, for rows without messages, the
	// most records in flight.
	by, msgs := owners(sites, h.baseSites)
	n := read - acked
	if better(msgs, n, h.bestMsgs, h.bestInFlight, h.best != nil) {
		h.best, h.bestInFlight = b.Bytes(), n
		h.bestReadDuring, h.bestAckDuring = readAfter-read, ackedAfter-acked
		h.bestOwners, h.bestMsgs = by, msgs
	}
}

// better reports whether a candidate profile holding msgs Benthos messages,
// taken at n records in flight, beats the best so far (bestMsgs, bestN;
// have: there is one).
func better(msgs float64, n int64, bestMsgs float64, bestN int64, have bool) bool {
	switch {
	case !have:
		return true
	case msgs >= 1 || bestMsgs >= 1:
		return msgs > bestMsgs
	default:
		return n > bestN
	}
}

// write writes the base to <prefix>-<row>-start.pprof and the peak to
// <prefix>-<row>.pprof, and returns lines saying what the peak held, by
// owner.
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
	return ownersReport(h.bestOwners, h.bestInFlight, h.bestReadDuring, h.bestAckDuring, h.bestMsgs) +
		fmt.Sprintf("\n        (go tool pprof -sample_index=inuse_space -base %s %s)", start, peak), nil
}

// heapUse is in-use heap: bytes and objects, scaled from the samples.
type heapUse struct{ bytes, objects float64 }

// heapByStack returns the in-use heap of the last published profile by
// allocation stack, scaled as runtime/pprof scales it.
func heapByStack() map[[32]uintptr]heapUse {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	rate := float64(runtime.MemProfileRate)
	out := make(map[[32]uintptr]heapUse, len(recs))
	for _, r := range recs {
		objs, size := float64(r.InUseObjects()), float64(r.InUseBytes())
		if objs <= 0 || size <= 0 {
			continue
		}
		if rate > 1 {
			// An allocation of s bytes is sampled with probability
			// 1 - exp(-s/rate) (runtime/pprof's scaleHeapSample).
			scale := 1 / (1 - math.Exp(-(size/objs)/rate))
			objs, size = objs*scale, size*scale
		}
		u := out[r.Stack0]
		out[r.Stack0] = heapUse{bytes: u.bytes + size, objects: u.objects + objs}
	}
	return out
}

// Owners of the heap in flight, in report order: an allocation belongs to
// the first whose pattern its site (the first function of its stack
// outside the runtime) contains; bench-only code anywhere in the stack
// makes it the bench's.
const (
	ownerBench     = "the bench's Kafka and emulator"
	ownerMetadata  = "Benthos metadata maps"
	ownerBenthos   = "Benthos messages, contexts, tracing"
	ownerFetched   = "Kafka records fetched (franz-go)"
	ownerInput     = "kafka_txn input"
	ownerAssembler = "txn_assembler and contract"
	ownerOutput    = "starrocks_txn output"
	ownerOther     = "other"
)

var ownerOrder = []string{ownerMetadata, ownerBenthos, ownerFetched, ownerInput, ownerAssembler, ownerOutput, ownerOther, ownerBench}

var ownerSites = []struct{ owner, pattern string }{
	{ownerMetadata, "benthos/v4/internal/message.(*messageData).writeableMeta"},
	{ownerMetadata, "benthos/v4/internal/message.(*messageData).MetaSetMut"},
	{ownerFetched, "github.com/twmb/franz-go/"},
	{ownerFetched, "github.com/klauspost/compress/"},
	{ownerFetched, "github.com/pierrec/lz4/"},
	{ownerFetched, "input/kafka_txn.(*partState).addFetched"},
	{ownerBenthos, "github.com/redpanda-data/benthos/"},
	{ownerBenthos, "context."},
	{ownerInput, "/input/kafka_txn."},
	{ownerInput, "/internal/kafka"},
	{ownerAssembler, "/processor/txn_assembler."},
	{ownerAssembler, "/internal/contract."},
	{ownerAssembler, "/internal/jsonscan."},
	{ownerOutput, "/output/starrocks_txn"},
	{ownerOutput, "/internal/bufpool."},
	{ownerOutput, "/internal/starrocks."},
}

// benchOnly are the packages that only the bench runs in its process:
// what they call allocates for the bench. The bench's own code is
// benchSite: what it allocates itself (the pipeline it runs is below it in
// every stack).
var benchOnly = []string{"/emulator", "franz-go/pkg/kfake", "/testkit/", "go-mysql-server"}

const benchSite = "/commands/bench."

// owners sums the heap of sites over base's by owner, and counts the
// Benthos messages among it.
func owners(sites, base map[[32]uintptr]heapUse) (map[string]heapUse, float64) {
	out := map[string]heapUse{}
	var msgs float64
	for stk, u := range sites {
		b := base[stk]
		d := heapUse{bytes: u.bytes - b.bytes, objects: u.objects - b.objects}
		if d.bytes == 0 {
			continue
		}
		o, site := ownerOf(stk)
		t := out[o]
		out[o] = heapUse{bytes: t.bytes + d.bytes, objects: t.objects + d.objects}
		if o != ownerBench && isMessageSite(site) {
			msgs += d.objects
		}
	}
	return out, msgs
}

// messageSites allocate the data of a Benthos message: one per message
// (service.NewMessage, Message.Copy).
var messageSites = []string{"benthos/v4/internal/message.newMessageBytes", "benthos/v4/internal/message.(*messageData).ShallowCopy", "benthos/v4/internal/message.(*messageData).DeepCopy"}

func isMessageSite(site string) bool {
	for _, s := range messageSites {
		if site == "github.com/redpanda-data/"+s {
			return true
		}
	}
	return false
}

// ownerOf names the owner of an allocation stack and its site.
func ownerOf(stk [32]uintptr) (owner, site string) {
	var pcs []uintptr
	for _, pc := range stk {
		if pc == 0 {
			break
		}
		pcs = append(pcs, pc)
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		fn := f.Function
		for _, p := range benchOnly {
			if strings.Contains(fn, p) {
				return ownerBench, fn
			}
		}
		if site == "" && fn != "" && !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "internal/runtime/") {
			site = fn
			if strings.Contains(fn, benchSite) {
				return ownerBench, fn
			}
		}
		if !more {
			break
		}
	}
	for _, s := range ownerSites {
		if strings.Contains(site, s.pattern) {
			return s.owner, site
		}
	}
	return ownerOther, site
}

// ownersReport says what the heap over the base held at n records in
// flight (readDuring and ackedDuring more read and acknowledged while the
// collection ran), in all and by
// owner, per Benthos message held (msgs: each record read is one message,
// held from the input until its acknowledgement, so this is the heap per
// record held; the bench's count of records in flight moves while the
// collection runs), or per record in flight when no message was counted.
func ownersReport(by map[string]heapUse, n, readDuring, ackedDuring int64, msgs float64) string {
	var total, bench float64
	for o, u := range by {
		total += u.bytes
		if o == ownerBench {
			bench += u.bytes
		}
	}
	per, unit := float64(n), "record in flight"
	if msgs >= 1 {
		per, unit = msgs, "message"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "heap profile at %d records in flight (during the collection %d more read, %d acknowledged), %.0f Benthos messages live (one per record held): %.1f MiB over the row's start, %.0f B per %s (%.0f B without the bench's Kafka and emulator):",
		n, readDuring, ackedDuring, msgs, total/(1<<20), total/per, unit, (total-bench)/per)
	order := append([]string(nil), ownerOrder...)
	sort.SliceStable(order, func(i, j int) bool { return by[order[i]].bytes > by[order[j]].bytes })
	for _, o := range order {
		u, ok := by[o]
		if !ok {
			continue
		}
		fmt.Fprintf(&sb, "\n        %-38s %7.1f MiB %6.0f B per %s", o, u.bytes/(1<<20), u.bytes/per, unit)
	}
	return sb.String()
}
