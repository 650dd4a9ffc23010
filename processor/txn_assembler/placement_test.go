package txnassembler

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/testlog"
)

// events is a generate input of envelope events: source transactions of a
// BEGIN, one DATA row and an END, in partition 7.
const events = `
generate:
  count: %d
  interval: "%s"
  mapping: |
    let n = counter() - 1
    let pos = $n %% 3
    root.partition = 7
    root.txnId = "t-" + ($n / 3).floor().string()
    root.type = match $pos {
      0 => "TXN_BEGIN"
      2 => "TXN_END"
      _ => "DATA"
    }
    root.database = if $pos == 1 { "test" }
    root.table = if $pos == 1 { "orders" }
    root.json = if $pos == 1 { {"id": $n}.format_json().string() }
`

// placed is a stream with the assembler at a place, as a custom binary
// would run it (through Benthos's own builder, without the OnConfigParse
// check of this project's binary).
type placed struct {
	logs      *testlog.Buffer
	delivered *atomic.Int64
	stream    *service.Stream
}

// buildPlaced builds a stream of the events input (with the assembler under
// its processors when inInput), then, when threads is not 0, the assembler
// under pipeline.processors with those threads, into a consumer that counts
// what arrives without an error.
func buildPlaced(t *testing.T, count int, interval string, inInput bool, threads int) placed {
	t.Helper()
	b := service.NewStreamBuilder()
	in := fmt.Sprintf(events, count, interval)
	if inInput {
		in += "processors:\n  - txn_assembler:\n      format: envelope\n"
	}
	require.NoError(t, b.AddInputYAML(in))
	if threads != 0 {
		b.SetThreads(threads)
		require.NoError(t, b.AddProcessorYAML("txn_assembler:\n  format: envelope\n"))
	}
	logs := &testlog.Buffer{}
	b.SetLogger(slog.New(slog.NewTextHandler(logs, nil)))
	var delivered atomic.Int64
	require.NoError(t, b.AddConsumerFunc(func(_ context.Context, m *service.Message) error {
		if m.GetError() == nil {
			delivered.Add(1)
		}
		return nil
	}))
	s, err := b.Build()
	require.NoError(t, err)
	return placed{logs: logs, delivered: &delivered, stream: s}
}

// A place that is wrong whatever pipeline.threads is refused when Benthos
// builds the processor, with lint's text: the stream does not start (a
// processor resource, which Benthos builds when first used, fails every
// use with it and logs it).
func TestMisplacedAssemblerDoesNotStart(t *testing.T) {
	for name, c := range map[string]struct {
		conf, want string
		resource   bool
	}{
		"an output's processors": {conf: `
input:
` + indent(fmt.Sprintf(events, 3, ""), "  ") + `
output:
  drop: {}
  processors:
    - txn_assembler: {}
`, want: "output.processors.0: " + "txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here it is an output's processor"},
		"inside another processor": {conf: `
input:
` + indent(fmt.Sprintf(events, 3, ""), "  ") + `
  processors:
    - branch:
        processors:
          - txn_assembler: {}
output:
  drop: {}
`, want: "input.processors.0.branch.processors.0: txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here it is inside another processor"},
		"a batching policy's processors": {conf: `
input:
  broker:
    inputs:
      - ` + strings.TrimSpace(indent(fmt.Sprintf(events, 3, ""), "        ")) + `
    batching:
      count: 3
      processors:
        - txn_assembler: {}
output:
  drop: {}
`, want: "txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here it is a batching policy's processor"},
		"a processor resource": {conf: `
input:
` + indent(fmt.Sprintf(events, 3, ""), "  ") + `
  processors:
    - resource: asm
processor_resources:
  - label: asm
    txn_assembler: {}
output:
  drop: {}
`, want: "processor_resources: txn_assembler must see every partition's messages in order, one call at a time: put it under input.processors, or under pipeline.processors with pipeline.threads: 1; a processor resource can be used from any place", resource: true},
	} {
		t.Run(name, func(t *testing.T) {
			b := service.NewStreamBuilder()
			require.NoError(t, b.SetYAML(c.conf))
			logs := &testlog.Buffer{}
			b.SetLogger(slog.New(slog.NewTextHandler(logs, nil)))
			s, err := b.Build()
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if !c.resource {
				err = s.Run(ctx)
				require.Error(t, err, "the stream must not start")
				assert.Contains(t, err.Error(), c.want)
				return
			}
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), c.want) }, 30*time.Second, 20*time.Millisecond)
			_ = s.StopWithin(5 * time.Second)
			<-done
		})
	}
}

// pipeline.threads: 2, the placement a custom binary's lint (Benthos's own)
// accepts: the processor refuses its first call and every other, so nothing
// is stamped out of order or delivered; the log names the place and the
// fix; the stream still stops.
func TestPipelineThreadsTwoIsRefused(t *testing.T) {
	p := buildPlaced(t, 300, "1ms", false, 2)
	held := heldCalls()
	done := make(chan error, 1)
	go func() { done <- p.stream.Run(context.Background()) }()
	want := "txn_assembler refuses to run here: pipeline.processors.0: txn_assembler must see every partition's messages in order, one call at a time: " +
		"put it under input.processors, or under pipeline.processors with pipeline.threads: 1; here pipeline.threads is not 1 " +
		"(Benthos runs these processors in a pool of 2 threads"
	require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), want) }, 30*time.Second, 20*time.Millisecond,
		"the refusal is logged: %s", p.logs.String())
	require.Eventually(t, func() bool { return strings.Count(p.logs.String(), want) == 2 }, 30*time.Second, 20*time.Millisecond,
		"both threads' calls are held")
	// Both calls parked until the stream stops: the pool's two threads
	// can process nothing more, so what passed by now is all that ever
	// passes before the stop.
	testkit.WaitFor(t, 30*time.Second, func() bool { return heldCalls() >= held+2 }, "both threads' calls parked in the refusal's wait")
	assert.Zero(t, p.delivered.Load(), "nothing passes")
	assert.Equal(t, 2, strings.Count(p.logs.String(), want), "no call but the two held ones")
	assert.NotContains(t, p.logs.String(), "ProcessBatch called concurrently", "held, not run side by side")

	_ = p.stream.StopWithin(2 * time.Second)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not stop")
	}
	assert.Zero(t, p.delivered.Load())
}

// heldCalls counts the goroutines parked in placementGuard.admit's wait for
// the end of the stream.
func heldCalls() int {
	n := 0
	for _, g := range bytes.Split(stack(true), []byte("\n\n")) {
		head, _, _ := bytes.Cut(g, []byte("\n"))
		if bytes.Contains(head, []byte("[chan receive")) && bytes.Contains(g, []byte(".(*placementGuard).admit(")) {
			n++
		}
	}
	return n
}

// pipeline.threads: -1 (Benthos's default) is a pool too, even of one
// thread: refused as lint refuses it.
func TestPipelineDefaultThreadsIsRefused(t *testing.T) {
	p := buildPlaced(t, 30, "", false, -1)
	done := make(chan error, 1)
	go func() { done <- p.stream.Run(context.Background()) }()
	require.Eventually(t, func() bool { return strings.Contains(p.logs.String(), "here pipeline.threads is not 1") }, 30*time.Second, 20*time.Millisecond)
	_ = p.stream.StopWithin(2 * time.Second)
	<-done
	assert.Zero(t, p.delivered.Load())
}

// pipeline.threads: 1 runs: one goroutine, in order.
func TestPipelineThreadsOneRuns(t *testing.T) {
	p := buildPlaced(t, 30, "", false, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.stream.Run(ctx))
	// Ten transactions: a row and an END marker each; BEGINs dropped.
	assert.Equal(t, int64(20), p.delivered.Load())
	assert.NotContains(t, p.logs.String(), "refuses")
}

// The right place is never refused, and a processor built outside a stream
// (no path) is not either.
func TestRightPlacesAreNotRefused(t *testing.T) {
	p := buildPlaced(t, 30, "", true, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, p.stream.Run(ctx))
	assert.Equal(t, int64(20), p.delivered.Load())

	assert.Nil(t, componentPath(service.MockResources()))
	g, err := newPlacementGuard(nil, nil)
	assert.NoError(t, err)
	assert.Nil(t, g)
}

func TestStackParsing(t *testing.T) {
	own := []byte("goroutine 77 [running]:\nmain.f()\n\t/x.go:1 +0x1\ncreated by github.com/redpanda-data/benthos/v4/internal/pipeline.(*Processor).Consume in goroutine 12\n\t/p.go:9 +0x2\n")
	id, ok := creatorOf(own)
	require.True(t, ok)
	assert.Equal(t, uint64(12), id)
	_, ok = creatorOf([]byte("goroutine 1 [running]:\nmain.main()\n"))
	assert.False(t, ok, "the main goroutine has no creator")

	all := []byte("goroutine 1 [running]:\nmain.main()\n\ngoroutine 12 [select]:\n" + poolLoop + "(0xc0)\n\t/pool.go:1\n\ngoroutine 120 [chan receive]:\nx()\n")
	block, ok := goroutineBlock(all, 12)
	require.True(t, ok)
	assert.Contains(t, string(block), poolLoop+"(")
	assert.NotContains(t, string(block), "goroutine 120")
	block, ok = goroutineBlock(all, 1)
	require.True(t, ok)
	assert.Equal(t, "goroutine 1 [running]:\nmain.main()", string(block))
	_, ok = goroutineBlock(all, 2)
	assert.False(t, ok)
}

func indent(s, by string) string {
	lines := strings.Split(strings.Trim(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n")
}
