package txnassembler_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"

	_ "github.com/starrocks-txn/benthos-starrocks/input/kafka_txn"
	_ "github.com/starrocks-txn/benthos-starrocks/processor/txn_assembler"
	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// streamBenchTxns is the default number of committed source transactions the
// stream benchmark pre-produces (about 7.5 records each); override it with
// TXN_ASSEMBLER_BENCH_TXNS.
const streamBenchTxns = 20000

// BenchmarkStreamAssemblerVsDrop reads the same pre-loaded kfake topic (the
// workload generator's envelope traffic, 4 partitions) twice per iteration,
// side by side: kafka_txn → drop, and kafka_txn → txn_assembler → drop. It
// reports both rates and their ratio, which is the figure that matters: the
// assembler's share of the critical path on this machine, whatever its load.
func BenchmarkStreamAssemblerVsDrop(b *testing.B) {
	txns := streamBenchTxns
	if s := os.Getenv("TXN_ASSEMBLER_BENCH_TXNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("TXN_ASSEMBLER_BENCH_TXNS must be a positive number, got %q", s)
		}
		txns = n
	}
	const topic, partitions = "cdc", 4
	cluster := kafka.New(b, kafka.Topic(topic, partitions, nil))
	brokers := cluster.Brokers()[0]
	gen := workload.NewGenerator(workload.Options{Partitions: partitions, Seed: 1, Events: true})
	prod, err := workload.NewProducer(workload.ProducerOptions{
		Brokers: cluster.Brokers(), Topic: topic, TxnsPerKafkaTxn: 50, AbortRatio: 0.05,
		TransactionalID: "stream-bench",
	}, gen, workload.NewModel())
	if err != nil {
		b.Fatal(err)
	}
	err = prod.Produce(context.Background(), txns)
	prod.Close()
	if err != nil {
		b.Fatal(err)
	}
	records := prod.Stats.Records.Load()
	// The assembler drops each BEGIN and turns each END into a marker.
	emitted := records - prod.Stats.Committed.Load()

	var dropTotal, asmTotal, dropCPU, asmCPU time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wall, cpu := runStreamBench(b, brokers, topic, fmt.Sprintf("drop-%d", i), false, records)
		dropTotal, dropCPU = dropTotal+wall, dropCPU+cpu
		wall, cpu = runStreamBench(b, brokers, topic, fmt.Sprintf("asm-%d", i), true, emitted)
		asmTotal, asmCPU = asmTotal+wall, asmCPU+cpu
	}
	b.StopTimer()
	n := float64(records) * float64(b.N)
	dropRate, asmRate := n/dropTotal.Seconds(), n/asmTotal.Seconds()
	b.ReportMetric(dropRate, "drop_rec/s")
	b.ReportMetric(asmRate, "asm_rec/s")
	b.ReportMetric(asmRate/dropRate, "asm/drop")
	b.ReportMetric(float64(dropCPU.Microseconds())/n, "drop_cpu_us/rec")
	b.ReportMetric(float64(asmCPU.Microseconds())/n, "asm_cpu_us/rec")
	b.ReportMetric(float64(records), "records")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runStreamBench runs one pipeline over the whole topic with a fresh
// consumer group and returns the time from its first delivered batch to the
// delivery of the want-th message (connecting and joining the group are not
// measured), and the CPU time the process used over the same window.
func runStreamBench(b *testing.B, brokers, topic, group string, assembler bool, want int64) (time.Duration, time.Duration) {
	b.Helper()
	procs := ""
	if assembler {
		procs = "processors:\n  - txn_assembler:\n      format: envelope\n"
	}
	sb := service.NewStreamBuilder()
	if err := sb.SetLoggerYAML("level: warn"); err != nil {
		b.Fatal(err)
	}
	if err := sb.AddInputYAML(fmt.Sprintf(`
kafka_txn:
  seed_brokers: [ %q ]
  topics: [ %q ]
  consumer_group: %q
  isolation_level: read_committed
  checkpoint_limit: 100000
  batching:
    count: 1000
    period: 50ms
%s`, brokers, topic, group, procs)); err != nil {
		b.Fatal(err)
	}
	var (
		got       atomic.Int64
		mu        sync.Mutex
		first     time.Time
		last      time.Time
		firstCPU  time.Duration
		lastCPU   time.Duration
		errs      atomic.Int64
		done      = make(chan struct{})
		closeOnce sync.Once
	)
	if err := sb.AddBatchConsumerFunc(func(_ context.Context, batch service.MessageBatch) error {
		now := time.Now()
		mu.Lock()
		if first.IsZero() {
			first, firstCPU = now, processCPU(b)
		}
		last = now
		if got.Load()+int64(len(batch)) >= want {
			lastCPU = processCPU(b)
		}
		mu.Unlock()
		for _, m := range batch {
			if m.GetError() != nil {
				errs.Add(1)
			}
		}
		if got.Add(int64(len(batch))) >= want {
			closeOnce.Do(func() { close(done) })
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	stream, err := sb.Build()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- stream.Run(ctx) }()
	select {
	case <-done:
	case err := <-runErr:
		b.Fatalf("the stream stopped after %d of %d messages: %v", got.Load(), want, err)
	case <-ctx.Done():
		b.Fatalf("%d of %d messages after 5 minutes", got.Load(), want)
	}
	if err := stream.StopWithin(20 * time.Second); err != nil {
		b.Fatalf("stopping the stream: %v", err)
	}
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d messages were flagged with an error", n)
	}
	if n := got.Load(); n != want {
		b.Fatalf("%d messages delivered, want %d", n, want)
	}
	mu.Lock()
	defer mu.Unlock()
	return last.Sub(first), lastCPU - firstCPU
}
