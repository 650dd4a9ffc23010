package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Columns are the table's headings, in order.
var Columns = []string{
	"configuration", "partitions", "batch (mean delivered)", "max_in_flight", "rows", "source txns",
	"rows/s", "source txns/s", "records/s (model bound)", "p50 visibility", "p99 visibility", "HTTP loads/s",
	"commits", "peak RSS MiB (at start)", "peak buffered / buffer_size", "verified",
}

// WriteTable prints the results as one Markdown table, then what each
// latency figure measures.
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
		buffered := "-"
		if r.Output == OutputStarRocksTxn {
			buffered = fmt.Sprintf("%.1f / %d MiB", float64(r.PeakBuffered)/(1<<20), r.BufferSize>>20)
		}
		commits := "-"
		if r.Output == OutputStarRocksTxn {
			commits = fmt.Sprint(r.Commits)
		}
		verified := "yes"
		if !r.Verified {
			verified = "NO: " + strings.TrimPrefix(r.Verification, "FAILED: ")
		}
		row([]string{
			r.Name, fmt.Sprint(r.Partitions), fmt.Sprintf("%d (%.0f)", r.Batch, r.RecordsPerBatch()), maxInFlight(r),
			fmt.Sprint(r.Rows), fmt.Sprint(r.SourceTxns),
			fmt.Sprintf("%.0f", r.RowsPerSec()), fmt.Sprintf("%.0f", r.TxnsPerSec()), recordsAndBound(r),
			fmtDur(r.VisP50), fmtDur(r.VisP99), fmt.Sprintf("%.1f", r.LoadsPerSec()), commits,
			fmt.Sprintf("%.0f (%.0f)", float64(r.PeakRSS)/(1<<20), float64(r.StartRSS)/(1<<20)),
			buffered, verified,
		})
	}
	fmt.Fprintln(w)
	if sr, ok := CompareSemantics(rs); ok {
		fmt.Fprintf(w, "exactly_once ÷ at_least_once (starrocks_txn, same workload, this run): throughput %.2f× (%.0f ÷ %.0f rows/s), p50 visibility %.2f× (%s ÷ %s), p99 visibility %.2f× (%s ÷ %s)\n",
			sr.Throughput, sr.ExactlyOnce.RowsPerSec(), sr.AtLeastOnce.RowsPerSec(),
			sr.P50, fmtDur(sr.ExactlyOnce.VisP50), fmtDur(sr.AtLeastOnce.VisP50),
			sr.P99, fmtDur(sr.ExactlyOnce.VisP99), fmtDur(sr.AtLeastOnce.VisP99))
		fmt.Fprintln(w, "  exactly_once: the same output with semantic exactly_once, writing its progress table over the")
		fmt.Fprintf(w, "  emulator's MySQL port and one progress row per partition into every commit; verified also against\n")
		fmt.Fprintf(w, "  %s (every partition's committed_offset = its last END offset in Kafka).\n", ProgressTable)
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Throughput: rows (and source transactions) ÷ time from the first record read to the last one acknowledged;")
	fmt.Fprintln(w, "  the workload was produced into Kafka before the pipeline started. batch: kafka_txn batching.count (and")
	fmt.Fprintln(w, "  http_client's output batch), with the mean number of records per input batch delivered in brackets.")
	fmt.Fprintln(w, "  records/s counts every Kafka record (rows and BEGIN/END events); the model bound in brackets is the")
	fmt.Fprintln(w, "  commit-cycle ceiling of starrocks_txn: max_in_flight × mean delivered batch ÷ commit_interval.")
	fmt.Fprintln(w, "Visibility: starrocks_txn: its starrocks_txn_visibility_latency_ns per source transaction, from the time")
	fmt.Fprintln(w, "  kafka_txn handed the record to the pipeline to the StarRocks commit; drop and http_client: per record,")
	fmt.Fprintln(w, "  read → acknowledgement (http_client acknowledges after its stream load returned, so the rows are visible).")
	for _, r := range rs {
		if r.Input == InputDebeziumTxn {
			fmt.Fprintf(w, "%s: the same source transactions as Debezium topics (one per table, %d partitions each, and a\n", r.Name, r.Partitions)
			fmt.Fprintln(w, "  transaction topic), assembled across partitions by the input; it delivers rows only, so its records/s are rows/s.")
		}
	}
	for _, r := range rs {
		if !r.Verified && r.Output == OutputHTTPClient {
			fmt.Fprintf(w, "%s did not reproduce the source: its max_in_flight (%d) concurrent batches race, so an older\n", r.Name, r.MaxInFlight)
			fmt.Fprintln(w, "  change of a key can land after a newer one (stale rows, deleted rows back, newer rows deleted);")
			fmt.Fprintln(w, "  --http-max-in-flight 1 keeps the order, slower.")
		}
	}
	fmt.Fprintln(w, "RSS: VmRSS of this whole process (in-process Kafka holding the workload and the emulator holding the")
	fmt.Fprintln(w, "  tables included), sampled every 25 ms; at start = after loading Kafka, before the pipeline ran.")
}

// recordsAndBound is records/s, and for starrocks_txn the commit-cycle
// model's bound: max_in_flight × mean delivered batch ÷ commit_interval.
func recordsAndBound(r Result) string {
	rec := fmt.Sprintf("%.0f", perSec(r.Records, r.Elapsed))
	if b := r.ModelBound(r.CommitInterval); b > 0 {
		return fmt.Sprintf("%s (%.0f)", rec, b)
	}
	return rec + " (-)"
}

func maxInFlight(r Result) string {
	if r.Output == OutputDrop {
		return "-"
	}
	return fmt.Sprint(r.MaxInFlight)
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

// SemanticsRatio compares the starrocks_txn comparison rows of one run:
// exactly_once against at_least_once, same workload and settings.
type SemanticsRatio struct {
	AtLeastOnce, ExactlyOnce Result
	// Throughput, P50 and P99 are exactly_once ÷ at_least_once of rows/s
	// and of the p50 and p99 visibility latency.
	Throughput, P50, P99 float64
}

// CompareSemantics finds the at_least_once and exactly_once starrocks_txn
// rows of the comparison (not the sweep) among rs and returns their ratios;
// false when either is missing or has no figures.
func CompareSemantics(rs []Result) (SemanticsRatio, bool) {
	var sr SemanticsRatio
	var alo, eo bool
	for _, r := range rs {
		if r.Output != OutputStarRocksTxn || r.Sweep != "" {
			continue
		}
		switch r.Semantic {
		case SemanticAtLeastOnce:
			if !alo {
				sr.AtLeastOnce, alo = r, true
			}
		case SemanticExactlyOnce:
			if !eo {
				sr.ExactlyOnce, eo = r, true
			}
		}
	}
	a, e := sr.AtLeastOnce, sr.ExactlyOnce
	if !alo || !eo || a.RowsPerSec() <= 0 || a.VisP50 <= 0 || a.VisP99 <= 0 {
		return sr, false
	}
	sr.Throughput = e.RowsPerSec() / a.RowsPerSec()
	sr.P50 = float64(e.VisP50) / float64(a.VisP50)
	sr.P99 = float64(e.VisP99) / float64(a.VisP99)
	return sr, true
}
