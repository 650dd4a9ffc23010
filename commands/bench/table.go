package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Columns are the table's headings, in order.
var Columns = []string{
	"topic", "configuration", "records/s", "÷ kafka_txn → drop", "rows/s", "CPU µs/record", "B/record",
	"allocs/record", "cores", "GC %", "sys % (faults/record)", "batch (mean)", "p50 / p99 visibility", "loads/s", "loads/commit",
	"commits", "peak RSS MiB (start)", "peak live heap MiB (start)", "peak buffered MiB (records in flight)", "verified",
}

// WriteTable prints the results as one Markdown table, then the ratios the
// run is about and what each figure measures.
func WriteTable(w io.Writer, rs []Result) {
	row := func(cells []string) {
		fmt.Fprint(w, "|")
		for _, c := range cells {
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
	row(Columns)
	sep := make([]string, len(Columns))
	for i := range sep {
		sep[i] = "---"
	}
	row(sep)
	for _, r := range rs {
		dash := func(ok bool, s string) string {
			if !ok {
				return "-"
			}
			return s
		}
		verified := "yes"
		if !r.Verified {
			verified = "NO: " + strings.TrimPrefix(r.Verification, "FAILED: ")
		}
		vis := "-"
		if r.LatencySource != "-" {
			vis = fmtDur(r.VisP50) + " / " + fmtDur(r.VisP99)
		}
		// The process rows are measured from the outside: no batch count,
		// RSS per process, allocations and GC share from the processes'
		// runtime metrics when every process answered both ends.
		inProc := r.Kind != KindProcesses
		alloc := inProc || r.RuntimeMeasured
		batch := fmt.Sprintf("%d (%.0f)", r.Batch, r.RecordsPerBatch())
		rss := fmt.Sprintf("%.0f (%.0f)", float64(r.PeakRSS)/(1<<20), float64(r.StartRSS)/(1<<20))
		buffered := fmt.Sprintf("%.1f (%d)", float64(r.PeakBuffered)/(1<<20), r.PeakInFlight)
		if !inProc {
			batch = fmt.Sprintf("%d (-)", r.Batch)
			rss = fmt.Sprintf("%.0f per process (Σ %.0f)", float64(r.PeakRSS)/(1<<20), float64(r.ProcessesRSS)/(1<<20))
			buffered = fmt.Sprintf("%.1f (-)", float64(r.PeakBuffered)/(1<<20))
		}
		row([]string{
			r.Topic.String(), r.Name,
			fmt.Sprintf("%.0f", r.RecordsPerSec()), dash(r.Ratio() > 0 && r.Rate == 0, fmt.Sprintf("%.2f", r.Ratio())),
			fmt.Sprintf("%.0f", r.RowsPerSec()),
			fmt.Sprintf("%.2f", r.CPUPerRecord()), dash(alloc, fmt.Sprintf("%.0f", r.BytesPerRecord())), dash(alloc, fmt.Sprintf("%.1f", r.AllocsPerRecord())),
			fmt.Sprintf("%.2f", r.Cores()), dash(alloc, fmt.Sprintf("%.0f", 100*r.GCShare)),
			fmt.Sprintf("%.0f (%.2f)", 100*r.SysShare(), r.FaultsPerRecord()),
			dash(r.Kind != KindFranz, batch),
			vis,
			dash(r.Loader(), fmt.Sprintf("%.1f", r.LoadsPerSec())), dash(r.Loader(), fmt.Sprintf("%.1f", r.LoadsPerCommit())),
			dash(r.Loader(), fmt.Sprint(r.Commits)),
			rss,
			dash(inProc, fmt.Sprintf("%.0f (%.0f)", float64(r.PeakLive)/(1<<20), float64(r.StartLive)/(1<<20))),
			dash(r.StarRocksTxn(), buffered),
			verified,
		})
	}
	fmt.Fprintln(w)
	for _, line := range Summary(rs) {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every row reads the same pre-loaded topic (its own consumer group; the loaders into a fresh emulator).")
	fmt.Fprintln(w, "  records/s: the topic's Kafka records (rows and BEGIN/END events) ÷ the time from the first record read")
	fmt.Fprintln(w, "  to the last one acknowledged (for the loaders: visible); rows/s the same for data rows. ÷ kafka_txn → drop:")
	fmt.Fprintln(w, "  records/s over that row's on the same topic in this run. CPU, B and allocs per record: the whole process")
	fmt.Fprintln(w, "  over that window (the in-process Kafka and emulator included), divided by the topic's records; cores: CPU")
	fmt.Fprintln(w, "  time ÷ wall time; GC %: the runtime's estimate of the garbage collector's share of its CPU time;")
	fmt.Fprintln(w, "  sys %: the kernel's share of the process's CPU time (loopback syscalls, page faults), with minor page faults per record.")
	fmt.Fprintln(w, "  batch: kafka_txn batching.count, the mean delivered batch in brackets.")
	fmt.Fprintln(w, "Visibility: starrocks_txn: its starrocks_txn_visibility_latency_ns per source transaction, from the time")
	fmt.Fprintln(w, "  the record was read to the StarRocks commit; the others: per record, read → acknowledgement")
	fmt.Fprintln(w, "  (http_client acknowledges after its stream load returned, so the rows are visible).")
	fmt.Fprintln(w, "The pre-built contract stream: the topic read through kafka_txn → txn_assembler before the row, untimed,")
	fmt.Fprintln(w, "  then handed to starrocks_txn from memory: the output and the emulator alone.")
	for _, r := range rs {
		if r.Mode == ModePerTable {
			fmt.Fprintln(w, "per_table (StarRocks "+PerTableVersion+"): starrocks_txn with transaction_mode per_table into the emulator answering as")
			fmt.Fprintln(w, "  StarRocks "+PerTableVersion+", which has no multi-table transactions: each cycle's tables are loaded as classic")
			fmt.Fprintln(w, "  transactions, all prepared, the decision committed, then each committed; its commit window is in the summary.")
			break
		}
	}
	for _, r := range rs {
		if r.Kind == KindDebezium {
			fmt.Fprintln(w, "debezium_txn: the same source transactions produced as Debezium topics into the same Kafka (one per table,")
			fmt.Fprintln(w, "  as many partitions each, and a transaction topic), assembled across partitions by the input; it")
			fmt.Fprintln(w, "  delivers rows only, so its records are its rows (its ratio to drop compares different record counts).")
			break
		}
	}
	for _, r := range rs {
		if !r.Verified && r.Kind == KindHTTP {
			fmt.Fprintf(w, "%s did not reproduce the source: its max_in_flight (%d) concurrent batches race, so an older\n", r.Name, r.MaxInFlight)
			fmt.Fprintln(w, "  change of a key can land after a newer one (stale rows, deleted rows back, newer rows deleted);")
			fmt.Fprintln(w, "  --http-max-in-flight 1 keeps the order, slower.")
			break
		}
	}
	for _, r := range rs {
		if r.Kind == KindProcesses {
			fmt.Fprintln(w, "OS processes: the exactly_once pipeline run as processes of this binary in one consumer group, reading")
			fmt.Fprintln(w, "  this process's Kafka and loading one emulator of this process, measured from the outside alike for 1 and N:")
			fmt.Fprintf(w, "  their Prometheus metrics polled every %s, from the first record received (input_received) to every\n", processPoll)
			fmt.Fprintln(w, "  source transaction committed (starrocks_txn_source_txns_committed summed); the group's rebalances as the")
			fmt.Fprintln(w, "  processes join are inside that window. CPU, sys and faults: the processes' own (/proc/<pid>/stat), not this")
			fmt.Fprintln(w, "  process's Kafka and emulator; B and allocs per record, GC %: the processes' Go runtime metrics")
			fmt.Fprintln(w, "  (go_memstats_alloc_bytes_total, go_memstats_mallocs_total, go_cpu_classes_gc_total_cpu_seconds_total over")
			fmt.Fprintln(w, "  go_cpu_classes_total_cpu_seconds_total) at the same polls; RSS: the largest process's VmHWM, Σ over the")
			fmt.Fprintln(w, "  processes. Visibility is not shown: without the bench's read-time stamp it would measure the pre-loaded")
			fmt.Fprintln(w, "  backlog's wait. The Debezium process row: debezium_txn → starrocks_txn on the Debezium topics, one process")
			fmt.Fprintln(w, "  (a connector's commit order is global); its records are its rows.")
			break
		}
	}
	fmt.Fprintln(w, "RSS: VmRSS of this whole process (in-process Kafka holding the workload and the emulator holding the")
	fmt.Fprintln(w, "  tables included), sampled every 25 ms; start = after a GC, before the row ran. Live heap: what the")
	fmt.Fprintln(w, "  last garbage collection marked live (runtime/metrics /gc/heap/live:bytes), sampled alike. Peak buffered: the")
	fmt.Fprintln(w, "  output's starrocks_txn_buffered_bytes (row bytes, what buffer_size bounds), with the most records read")
	fmt.Fprintln(w, "  and not yet acknowledged at one time (each held whole, with its metadata, until its commit).")
}

// allocPerRow is a process row's heap allocations per row, "-" when its
// runtime figures were not read at both ends of its window (a process did
// not answer one of those polls): none, not zero.
func allocPerRow(r Result) string {
	if !r.RuntimeMeasured {
		return "-"
	}
	return fmt.Sprintf("%.0f", perRecord(float64(r.AllocBytes), r.Rows))
}

// Summary is the run's ratios, one line each: the assembler's and the
// pipeline's against kafka_txn → drop, exactly_once against at_least_once,
// the pipeline at each further partition count against the first, the
// loads per commit over the tables sweep, and the rows/s of N OS processes
// in one group against one process's.
func Summary(rs []Result) []string {
	var out []string
	// The OS processes' rows need no drop row: they compare with each
	// other.
	var procs []string
	var one *Result
	for i := range rs {
		if rs[i].Kind == KindProcesses && rs[i].Processes == 1 && !rs[i].Debezium {
			one = &rs[i]
		}
	}
	for _, r := range rs {
		if r.Kind == KindProcesses && r.Debezium && one != nil && one.RowsPerSec() > 0 {
			procs = append(procs, fmt.Sprintf("debezium_txn ÷ kafka_txn → txn_assembler, 1 OS process each (exactly_once, %s, this run): %.2f (%.0f ÷ %.0f rows/s); per row %.2f ÷ %.2f µs CPU, %s ÷ %s B allocated",
				r.Topic, r.RowsPerSec()/one.RowsPerSec(), r.RowsPerSec(), one.RowsPerSec(),
				r.CPUPerRow(), one.CPUPerRow(), allocPerRow(r), allocPerRow(*one)))
		}
		if r.Kind == KindProcesses && r.Processes > 1 && one != nil && one.RowsPerSec() > 0 {
			procs = append(procs, fmt.Sprintf("%d OS processes ÷ 1 (exactly_once, one consumer group, %s, this run): %.2f (%.0f ÷ %.0f rows/s)",
				r.Processes, r.Topic, r.RowsPerSec()/one.RowsPerSec(), r.RowsPerSec(), one.RowsPerSec()))
		}
	}
	var first *Result
	for i := range rs {
		if rs[i].Kind == KindDrop {
			first = &rs[i]
			break
		}
	}
	if first == nil {
		return append(procs, perTableSummary(rs)...)
	}
	base := first.Topic
	find := func(t Topic, kind, semantic string) (Result, bool) {
		for _, r := range rs {
			if r.Topic == t && r.Kind == kind && r.Semantic == semantic && r.Rate == 0 && r.Mode == "" && r.SchemaEvolution == "" {
				return r, true
			}
		}
		return Result{}, false
	}
	pipe, havePipe := find(base, KindPipeline, SemanticAtLeastOnce)
	if r, ok := find(base, KindAssembler, ""); ok {
		out = append(out, fmt.Sprintf("assembler ÷ drop (%s, this run): %.2f (%.0f ÷ %.0f records/s)", base, r.Ratio(), r.RecordsPerSec(), r.DropRecordsPerSec))
	}
	if havePipe {
		out = append(out, fmt.Sprintf("pipeline ÷ drop (%s, this run): %.2f (%.0f ÷ %.0f records/s)", base, pipe.Ratio(), pipe.RecordsPerSec(), pipe.DropRecordsPerSec))
	}
	if r, ok := find(base, KindOutput, SemanticAtLeastOnce); ok {
		out = append(out, fmt.Sprintf("output alone ÷ drop (%s, this run): %.2f (%.0f ÷ %.0f records/s)", base, r.Ratio(), r.RecordsPerSec(), r.DropRecordsPerSec))
	}
	if eo, ok := find(base, KindPipeline, SemanticExactlyOnce); ok && havePipe && pipe.RowsPerSec() > 0 && pipe.VisP50 > 0 && pipe.VisP99 > 0 {
		out = append(out, fmt.Sprintf("exactly_once ÷ at_least_once (%s, this run): throughput %.2f× (%.0f ÷ %.0f rows/s), p50 visibility %.2f× (%s ÷ %s), p99 visibility %.2f× (%s ÷ %s)",
			base, eo.RowsPerSec()/pipe.RowsPerSec(), eo.RowsPerSec(), pipe.RowsPerSec(),
			float64(eo.VisP50)/float64(pipe.VisP50), fmtDur(eo.VisP50), fmtDur(pipe.VisP50),
			float64(eo.VisP99)/float64(pipe.VisP99), fmtDur(eo.VisP99), fmtDur(pipe.VisP99)))
	}
	for _, r := range rs {
		if r.Kind != KindPipeline || r.Mode != "" || r.SchemaEvolution != "" || r.Semantic != SemanticAtLeastOnce || r.Rate > 0 || r.Topic.Tables > 0 || r.Topic == base || !havePipe || pipe.RowsPerSec() <= 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%d ÷ %d partitions (starrocks_txn rows/s, this run): %.2f (%.0f ÷ %.0f); p99 visibility %s",
			r.Topic.Partitions, base.Partitions, r.RowsPerSec()/pipe.RowsPerSec(), r.RowsPerSec(), pipe.RowsPerSec(), fmtDur(r.VisP99)))
	}
	var parts []string
	for _, r := range rs {
		if r.Kind == KindPipeline && r.Semantic == SemanticAtLeastOnce && r.Rate == 0 && r.Topic.Tables == 0 && r.Mode == "" && r.SchemaEvolution == "" {
			parts = append(parts, fmt.Sprintf("%d partitions %.1f", r.Topic.Partitions, r.LoadsPerCommit()))
		}
	}
	if len(parts) > 1 {
		out = append(out, "loads per commit (starrocks_txn, 3 tables): "+strings.Join(parts, ", "))
	}
	var tables []string
	for _, r := range rs {
		if r.Kind == KindPipeline && r.Rate == 0 && r.Topic.Tables > 0 {
			tables = append(tables, fmt.Sprintf("%d tables %.1f", r.Topic.Tables, r.LoadsPerCommit()))
		}
	}
	if len(tables) > 0 {
		out = append(out, "loads per commit (starrocks_txn, "+fmt.Sprint(base.Partitions)+" partitions): "+strings.Join(tables, ", "))
	}
	for _, r := range rs {
		if r.SchemaEvolution != SchemaIgnore || r.Rate > 0 {
			continue
		}
		if checked, ok := find(r.Topic, r.Kind, r.Semantic); ok && r.RowsPerSec() > 0 {
			out = append(out, fmt.Sprintf("schema checks, %s (%s, this run): schema_evolution evolve (the default) ÷ ignore %.2f (%.0f ÷ %.0f rows/s)",
				rowName(r.Kind, r.Semantic), r.Topic, checked.RowsPerSec()/r.RowsPerSec(), checked.RowsPerSec(), r.RowsPerSec()))
		}
	}
	for _, r := range rs {
		if r.Rate > 0 && r.Topic.Tables == 0 {
			out = append(out, fmt.Sprintf("paced at %d records/s (%s): %.0f records/s delivered, p50 / p99 visibility %s / %s (commit request p50 / p99 %s / %s)", r.Rate, r.Topic, r.RecordsPerSec(), fmtDur(r.VisP50), fmtDur(r.VisP99), fmtDur(r.CommitP50), fmtDur(r.CommitP99)))
		}
	}
	return append(append(out, procs...), perTableSummary(rs)...)
}

// perTableSummary is a line per per-table row: its commit windows and its
// ratios to the multi-table row of the same topic and semantic.
func perTableSummary(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if r.Mode != ModePerTable || r.Rate > 0 {
			continue
		}
		line := fmt.Sprintf("per_table (StarRocks %s) %s (%s, this run): commit window p50 / p99 / max %s / %s / %s over %d cycles (from a cycle's first COMMIT to its last data COMMIT's answer: a reader may see part of a source transaction within it, never after)",
			PerTableVersion, r.Semantic, r.Topic, fmtDur(r.WindowP50), fmtDur(r.WindowP99), fmtDur(r.WindowMax), r.Windows)
		for _, mt := range rs {
			if mt.Topic == r.Topic && mt.Kind == r.Kind && mt.Semantic == r.Semantic && mt.Mode == "" && mt.Rate == 0 && mt.RowsPerSec() > 0 && mt.VisP99 > 0 {
				line += fmt.Sprintf("; ÷ multi_table: throughput %.2f× (%.0f ÷ %.0f rows/s), p99 visibility %.2f× (%s ÷ %s)",
					r.RowsPerSec()/mt.RowsPerSec(), r.RowsPerSec(), mt.RowsPerSec(), float64(r.VisP99)/float64(mt.VisP99), fmtDur(r.VisP99), fmtDur(mt.VisP99))
				break
			}
		}
		out = append(out, line)
	}
	return out
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}
