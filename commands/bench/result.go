package bench

import "time"

// Result is the measured outcome of one row.
type Result struct {
	Config
	SourceTxns int64 // committed source transactions in the topic
	Rows       int64 // data rows (changes) of those transactions
	// Records is the topic's Kafka records (rows and BEGIN/END events):
	// every row's per-record figures divide by it, whatever the row's
	// input delivers (the pre-built contract stream has no BEGIN).
	Records int64
	// Batches is the number of input batches delivered, Delivered the
	// messages in them.
	Batches, Delivered int64
	// Starved counts starrocks_txn_max_in_flight_starved.
	Starved int64
	// StartDelay is the time from starting the row to its first record
	// (connecting, joining the consumer group); not in Elapsed.
	StartDelay time.Duration
	// Elapsed is the measured window: from the first record read to the
	// last one acknowledged (for the loaders: visible in the emulator).
	Elapsed time.Duration
	// PaceWait is, for a paced row (Rate), how long within Elapsed its
	// input held batches back to keep the rate; the rest of Elapsed is the
	// pipeline's own pace.
	PaceWait time.Duration
	// ReadSpan is the time from the first batch read to the last one,
	// LastBatch the messages of the last (ReadRate).
	ReadSpan  time.Duration
	LastBatch int64
	// CPU is the process's CPU time over the window (the in-process Kafka
	// and emulator included); AllocBytes and AllocObjects its heap
	// allocations; GCShare the garbage collector's estimated share of it.
	CPU          time.Duration
	AllocBytes   uint64
	AllocObjects uint64
	GCShare      float64
	// RuntimeMeasured is set on a process row whose allocations and GC
	// share were read from its processes' runtime metrics (both ends of
	// its window answered by every process).
	RuntimeMeasured bool
	// Sys is the system part of CPU (the kernel's: syscalls on loopback,
	// page faults); MinFaults the minor page faults over the window, each
	// a first touch of memory the process was given or given back.
	Sys       time.Duration
	MinFaults int64
	// VisP50 and VisP99: for starrocks_txn its own
	// starrocks_txn_visibility_latency_ns per source transaction, measured
	// from the time the record was read (the bench stamps
	// kafka_timestamp_ms with it); for the others the read →
	// acknowledgement time of each record.
	VisP50, VisP99 time.Duration
	LatencySource  string
	// CommitP50 and CommitP99: for starrocks_txn its
	// starrocks_txn_commit_latency_ns per committed cycle: from the commit
	// request's start (after the cycle's loads, its progress rows and the
	// lease wait) to its outcome, a commit in doubt's resolution included.
	CommitP50, CommitP99 time.Duration
	// Windows, WindowP50, WindowP99 and WindowMax (per-table rows): the
	// cycles measured by starrocks_txn_commit_window_ns and its quantiles,
	// the time from a cycle's first COMMIT to its last data COMMIT's
	// answer, within which a reader may see part of a source transaction.
	Windows                         int
	WindowP50, WindowP99, WindowMax time.Duration
	// Loads and Commits are the emulator's HTTP loads (transaction and
	// plain stream loads) and committed transactions.
	Loads, Commits int64
	PeakRSS        int64 // bytes, sampled VmRSS of the process during the run (process rows: the largest process's VmHWM)
	// ProcessesRSS is, for the process rows, the sum of the processes'
	// VmHWM.
	ProcessesRSS int64
	StartRSS     int64 // bytes, VmRSS when the row started
	// PeakLive and StartLive are the heap the garbage collector marked
	// live: the largest seen during the run, and after the GC before it.
	PeakLive, StartLive int64
	PeakBuffered        int64 // bytes, peak starrocks_txn_buffered_bytes
	// PeakInFlight is the most input messages read and not yet
	// acknowledged at one time (sampled): what the pipeline holds.
	PeakInFlight int64
	Verified     bool
	Verification string
	// DropRecordsPerSec is kafka_txn → drop's records/s on the same topic
	// in this run (0 when it did not run).
	DropRecordsPerSec float64
}

// SysShare is the kernel's share of the row's CPU time.
func (r Result) SysShare() float64 {
	if r.CPU <= 0 {
		return 0
	}
	return float64(r.Sys) / float64(r.CPU)
}

// FaultsPerRecord is the row's minor page faults per record of the topic.
func (r Result) FaultsPerRecord() float64 { return perRecord(float64(r.MinFaults), r.Records) }

func perSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func perRecord(v float64, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return v / float64(n)
}

// RecordsPerSec is the topic's Kafka records per second of the window.
func (r Result) RecordsPerSec() float64 { return perSec(r.Records, r.Elapsed) }

// ReadRate is the rate at which the input delivered: the messages read
// before the last batch over the time from the first read to the last. A
// paced input (Rate) delivers a batch only once the messages before it fit
// the rate, so this is what the pacer bounds; RecordsPerSec, over the whole
// window, may exceed the rate by the last batch.
func (r Result) ReadRate() float64 { return perSec(r.Delivered-r.LastBatch, r.ReadSpan) }

// RowsPerSec is data rows per second.
func (r Result) RowsPerSec() float64 { return perSec(r.Rows, r.Elapsed) }

// TxnsPerSec is source transactions per second.
func (r Result) TxnsPerSec() float64 { return perSec(r.SourceTxns, r.Elapsed) }

// CPUPerRecord is the process's CPU microseconds per record.
func (r Result) CPUPerRecord() float64 {
	return perRecord(float64(r.CPU)/float64(time.Microsecond), r.Records)
}

// CPUPerRow is the CPU time per data row (a Debezium row's records are its
// rows; the envelope topic's also count BEGIN and END).
func (r Result) CPUPerRow() float64 {
	return perRecord(float64(r.CPU)/float64(time.Microsecond), r.Rows)
}

// BytesPerRecord and AllocsPerRecord are the heap allocations per record.
func (r Result) BytesPerRecord() float64 { return perRecord(float64(r.AllocBytes), r.Records) }

// AllocsPerRecord is the number of heap allocations per record.
func (r Result) AllocsPerRecord() float64 { return perRecord(float64(r.AllocObjects), r.Records) }

// Cores is the CPU time over the wall time of the window.
func (r Result) Cores() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return r.CPU.Seconds() / r.Elapsed.Seconds()
}

// Ratio is records/s ÷ kafka_txn → drop's on the same topic (0 unknown).
func (r Result) Ratio() float64 {
	if r.DropRecordsPerSec <= 0 {
		return 0
	}
	return r.RecordsPerSec() / r.DropRecordsPerSec
}

// RecordsPerBatch is the mean size of the input batches delivered.
func (r Result) RecordsPerBatch() float64 {
	if r.Batches == 0 {
		return 0
	}
	return float64(r.Delivered) / float64(r.Batches)
}

// LoadsPerSec is HTTP loads per second.
func (r Result) LoadsPerSec() float64 { return perSec(r.Loads, r.Elapsed) }

// LoadsPerCommit is HTTP loads per committed StarRocks transaction (0 when
// nothing committed).
func (r Result) LoadsPerCommit() float64 {
	if r.Commits <= 0 {
		return 0
	}
	return float64(r.Loads) / float64(r.Commits)
}
