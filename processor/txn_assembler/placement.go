package txnassembler

// Home of G67 (ARCHITECTURE.md §11.4): the assembler runs only where it sees each partition's
// messages once, in order; elsewhere it refuses. Main test: TestMisplacedAssemblerDoesNotStart.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/placement"
)

// Where the processor is placed decides whether it sees every partition in
// order, one call at a time (internal/placement). The project's lint and
// its binary's start check the whole config; this file makes the processor
// itself refuse the same places, so that every binary built with the plugin
// — a custom one whose lint is Benthos's own — refuses them too.
//
// Benthos v4.60.0 tells a processor neither its place nor pipeline.threads,
// and builds one instance per place whatever the thread count (the pipeline's
// threads share it: docs/notes/benthos-semantics.md §3). What it offers:
//
//   - At construction, the path of the place, which Benthos's manager holds
//     for its logs and metrics (Resources.XUnwrapper, then the manager's
//     Path, read by reflection: neither is public API). A place that is wrong
//     whatever the threads — an output's processors, a batching policy,
//     inside another processor, a processor resource — fails the
//     construction, so the stream does not start, with lint's text.
//   - At the first call, whether a pipeline.processors place runs in a pool
//     of threads. Benthos runs pipeline.threads 1 in one goroutine and any
//     other value (-1, the default, included) in a pool: every worker is a
//     goroutine started by the pool's loop (internal/pipeline.(*Pool).loop).
//     The first call reads the goroutine that started its own; in a pool the
//     processor refuses every call, from the first, so nothing is stamped
//     out of order: each call is held, with an error logged that names the
//     fix, until the stream stops (its messages then fail, unacknowledged by
//     the output, so nothing is lost).
//
// When the path cannot be read (another Benthos version, a processor built
// by hand in a test) nothing is refused here, and the guard against
// overlapping calls (ErrConcurrentCalls) remains.

// poolLoop is the function a pipeline pool's goroutine runs, and
// workerStart the one that starts each of its workers (and the single
// goroutine of pipeline.threads 1).
const (
	poolLoop    = "github.com/redpanda-data/benthos/v4/internal/pipeline.(*Pool).loop"
	workerStart = "created by github.com/redpanda-data/benthos/v4/internal/pipeline.(*Processor).Consume"
)

// ErrMisplaced marks the messages of a call refused because the processor
// runs under pipeline.processors in a pool of threads.
var ErrMisplaced = errors.New("txn_assembler refuses to run here")

// componentPath returns the path Benthos built the processor at (e.g.
// [pipeline processors 0]), nil when it cannot be read.
func componentPath(mgr *service.Resources) (path []string) {
	if mgr == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			path = nil
		}
	}()
	unwrap := reflect.ValueOf(mgr.XUnwrapper()).MethodByName("Unwrap")
	if !unwrap.IsValid() || unwrap.Type().NumIn() != 0 || unwrap.Type().NumOut() != 1 {
		return nil
	}
	m, ok := unwrap.Call(nil)[0].Interface().(interface{ Path() []string })
	if !ok {
		return nil
	}
	return append([]string(nil), m.Path()...)
}

// placementGuard refuses the calls of a processor placed where it cannot see
// partitions in order.
type placementGuard struct {
	path []string
	log  *service.Logger

	once sync.Once
	// refusal is the error every call fails with, nil when the place is
	// right (set once, by the first call).
	refusal error
}

// newPlacementGuard judges the place at path: an error for a place that is
// wrong whatever the threads, a guard that checks the threads at the first
// call for a place under pipeline.processors, nil for a right place or an
// unknown one.
func newPlacementGuard(path []string, log *service.Logger) (*placementGuard, error) {
	if len(path) == 0 {
		return nil, nil
	}
	if why := placement.Judge(path, 0, false); why != "" {
		return nil, errors.New(why)
	}
	if !placement.InPipeline(path) {
		return nil, nil
	}
	return &placementGuard{path: path, log: log}, nil
}

// admit returns nil when the call may run, else the refusal, after holding
// the call until ctx ends.
func (g *placementGuard) admit(ctx context.Context) error {
	g.once.Do(func() {
		if inPool, workers := callerInPool(); inPool {
			g.refusal = fmt.Errorf("%w: %s", ErrMisplaced, refusalText(g.path, workers))
		}
	})
	if g.refusal == nil {
		return nil
	}
	g.log.Errorf("%v. Holding this call, unprocessed and unacknowledged, until the stream stops", g.refusal)
	<-ctx.Done()
	return g.refusal
}

// refusalText says why the place at path is refused: Benthos runs it in a
// pool of workers goroutines.
func refusalText(path []string, workers int) string {
	return fmt.Sprintf("%s: %s; here pipeline.threads is not 1 (Benthos runs these processors in a pool of %d threads; -1, the default, is one per CPU core), so its calls would overlap and lose the source order",
		strings.Join(path, "."), placement.Where, workers)
}

// callerInPool reports whether the calling goroutine is a worker of a
// Benthos pipeline pool (pipeline.threads other than 1), and how many
// workers the pool has.
func callerInPool() (bool, int) {
	creator, ok := creatorOf(stack(false))
	if !ok {
		return false, 0
	}
	all := stack(true)
	block, ok := goroutineBlock(all, creator)
	if !ok || !bytes.Contains(block, []byte(poolLoop+"(")) {
		return false, 0
	}
	// The pool's loop starts one worker per thread (and a forwarding
	// goroutine per worker, not counted).
	return true, bytes.Count(all, []byte(workerStart+" in goroutine "+strconv.FormatUint(creator, 10)+"\n"))
}

// stack returns the calling goroutine's stack, or every goroutine's.
func stack(all bool) []byte {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, all)
		if n < len(buf) || len(buf) >= 64<<20 {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// creatorOf reads the id of the goroutine that started the goroutine whose
// stack this is ("created by … in goroutine N").
func creatorOf(stack []byte) (uint64, bool) {
	i := bytes.LastIndex(stack, []byte("created by "))
	if i < 0 {
		return 0, false
	}
	line := stack[i:]
	if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	j := bytes.LastIndex(line, []byte(" in goroutine "))
	if j < 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(string(line[j+len(" in goroutine "):]), 10, 64)
	return id, err == nil
}

// goroutineBlock returns the stack of goroutine id from a dump of all.
func goroutineBlock(all []byte, id uint64) ([]byte, bool) {
	head := []byte("goroutine " + strconv.FormatUint(id, 10) + " [")
	i := 0
	if !bytes.HasPrefix(all, head) {
		k := bytes.Index(all, append([]byte("\n\n"), head...))
		if k < 0 {
			return nil, false
		}
		i = k + 2
	}
	block := all[i:]
	if end := bytes.Index(block, []byte("\n\n")); end >= 0 {
		block = block[:end]
	}
	return block, true
}
