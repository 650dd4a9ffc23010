package bench

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The process rows (--processes N): the exactly_once pipeline run as OS
// processes of the binary in one consumer group, reading the topic of this
// process's Kafka and loading one emulator of this process, as users scale
// out past one machine. The bench's timing wrapper cannot reach into
// another process, so these rows are measured from the outside, the one
// process and the N alike: each process serves Prometheus metrics on its
// HTTP server, polled every processPoll; the window runs from the first
// poll that finds a record received (input_received) to the first that
// finds every source transaction committed
// (starrocks_txn_source_txns_committed summed over the processes). CPU time,
// system time and minor page faults are the processes' own over the window
// (/proc/<pid>/stat), RSS each process's peak (VmHWM). Every row is
// verified as the in-process pipeline rows are: the tables equal the
// model, the processes together counted every source transaction committed
// once, and the progress table holds every partition's last END offset.

// processPoll is the period of the process rows' metrics polls: the
// resolution of their window.
const processPoll = 100 * time.Millisecond

// processesName names a process row; memLimit is the processes'
// GOMEMLIMIT (Options.ProcessMemLimit), if any.
func processesName(n int, memLimit string) string {
	name := "kafka_txn → txn_assembler → starrocks_txn exactly_once, 1 OS process"
	if n != 1 {
		name = fmt.Sprintf("kafka_txn → txn_assembler → starrocks_txn exactly_once, %d OS processes in one group", n)
	}
	if memLimit != "" {
		name += ", GOMEMLIMIT=" + memLimit
	}
	return name
}

// processEnv is the environment of a process of a process row: the
// bench's own, the member's id and HTTP address, and GOMEMLIMIT when the
// options set one for the processes (the bench's own process, which holds
// its Kafka and emulator, keeps its own).
func processEnv(base []string, id, addr, memLimit string) []string {
	env := append(append([]string(nil), base...), "BENCH_MEMBER="+id, "BENCH_HTTP="+addr)
	if memLimit != "" {
		// The last value of a variable wins (os/exec keeps the last
		// duplicate), so this overrides one the bench inherited.
		env = append(env, "GOMEMLIMIT="+memLimit)
	}
	return env
}

// ParseMemLimit checks s as the Go runtime reads GOMEMLIMIT: a whole
// number of bytes with an optional unit B, KiB, MiB, GiB or TiB (binary
// units), or "off". The runtime stops a process with a malformed value at
// its start, so the bench refuses one before it starts any.
func ParseMemLimit(s string) (int64, error) {
	if s == "off" {
		return -1, nil
	}
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || num == "" || num[0] == '+' || n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q is not a memory limit: a whole number of bytes with an optional unit B, KiB, MiB, GiB or TiB (e.g. 400MiB), or off", s)
	}
	return n * mult, nil
}

// debeziumProcessName names the Debezium process row.
func debeziumProcessName(memLimit string) string {
	name := "debezium_txn → starrocks_txn exactly_once, 1 OS process (same txns, Debezium topics)"
	if memLimit != "" {
		name += ", GOMEMLIMIT=" + memLimit
	}
	return name
}

// processMetricsYAML is the process rows' HTTP server (on BENCH_HTTP) and
// the Prometheus exporter the bench polls, with the Go runtime's metrics:
// the processes' allocations and the collector's CPU time.
const processMetricsYAML = `http:
  enabled: true
  address: ${BENCH_HTTP}
metrics:
  prometheus:
    add_go_metrics: true
logger:
  level: warn
  format: logfmt
`

// ProcessDebeziumYAML is the stream of the Debezium process row:
// debezium_txn reading the workload's Debezium topics in consumer group
// group, the row's starrocks_txn, and the HTTP server and exporter of
// processMetricsYAML.
func ProcessDebeziumYAML(c Config, o Options, group, brokers, feURL, mysqlAddr string) string {
	o.defaults()
	return processMetricsYAML + fmt.Sprintf(`input:
  debezium_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    transaction_topic: %s
%s%sshutdown_timeout: 20s
`, brokers, strings.Join(debeziumNaming.DataTopics(), ", "), debeziumNaming.TransactionTopic(), processGroupYAML(group, c.Batch), starrocksTxnYAML(c, o, feURL, mysqlAddr))
}

// processGroupYAML is the process rows' input settings after its topics:
// the consumer group, the member's client_id, and the batching.
func processGroupYAML(group string, batch int) string {
	return fmt.Sprintf(`    consumer_group: %s
    client_id: ${BENCH_MEMBER}
    checkpoint_limit: 100000
    batching:
      count: %d
      period: 50ms
`, group, batch)
}

// ProcessPipelineYAML is the stream every process of a process row runs:
// kafka_txn reading the topic directly in consumer group group (its
// client_id from BENCH_MEMBER), txn_assembler, the row's starrocks_txn, and
// the HTTP server on BENCH_HTTP with the Prometheus exporter the bench
// polls.
func ProcessPipelineYAML(c Config, o Options, group, brokers, feURL, mysqlAddr string) string {
	o.defaults()
	return processMetricsYAML + fmt.Sprintf(`input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ %q ]
%s  processors:
    - txn_assembler:
        format: envelope
%sshutdown_timeout: 20s
`, brokers, topicName, processGroupYAML(group, c.Batch), starrocksTxnYAML(c, o, feURL, mysqlAddr))
}

// benchProc is one process of a process row.
type benchProc struct {
	id, addr, log string
	cmd           *exec.Cmd
	done          chan struct{}
}

func (p *benchProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *benchProc) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

// startProc starts one process and waits until its HTTP server answers (a
// port taken between choosing and binding it is retried on another).
func startProc(bin, pipeline, dir, id, memLimit string) (*benchProc, error) {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("choosing a port for process %s: %w", id, err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		p := &benchProc{id: id, addr: addr, log: filepath.Join(dir, fmt.Sprintf("%s-%d.log", id, attempt)), done: make(chan struct{})}
		f, err := os.Create(p.log)
		if err != nil {
			return nil, err
		}
		p.cmd = exec.Command(bin, "-c", pipeline)
		p.cmd.Env = processEnv(os.Environ(), id, addr, memLimit)
		p.cmd.Stdout, p.cmd.Stderr = f, f
		if err := p.cmd.Start(); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("starting process %s (%s): %w", id, bin, err)
		}
		go func() {
			_ = p.cmd.Wait()
			_ = f.Close()
			close(p.done)
		}()
		last = p.waitReady()
		if last == nil {
			return p, nil
		}
		p.kill()
	}
	return nil, last
}

func (p *benchProc) waitReady() error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if !p.alive() {
			return fmt.Errorf("process %s exited at start:\n%s", p.id, p.logTail())
		}
		if resp, err := http.Get("http://" + p.addr + "/ping"); err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("process %s: its HTTP server did not answer within 60s", p.id)
}

func (p *benchProc) kill() {
	if p.alive() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// stop stops the process gracefully (SIGTERM) and reports whether it
// exited with status 0 within 30 s.
func (p *benchProc) stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
		return fmt.Errorf("process %s did not stop within 30s of SIGTERM", p.id)
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("process %s exited with %s:\n%s", p.id, p.cmd.ProcessState, p.logTail())
	}
	return nil
}

var procClient = &http.Client{Timeout: 5 * time.Second}

// metrics sums, over the process's series, each of the named counters and
// gauges of its /metrics.
func (p *benchProc) metrics(names ...string) (map[string]float64, error) {
	resp, err := procClient.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return sumSeries(b, names...), nil
}

// sumSeries sums, in the Prometheus text format b, every series of each
// name (its labels whatever they are).
func sumSeries(b []byte, names ...string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		for _, n := range names {
			rest, ok := strings.CutPrefix(line, n)
			if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
			if len(f) == 0 {
				continue
			}
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[n] += v
			}
		}
	}
	return out
}

// procCPU is a process's CPU use so far from /proc/<pid>/stat: user and
// system time (clock ticks of 10 ms, Linux's USER_HZ) and minor faults.
type procCPU struct {
	cpu, sys  time.Duration
	minFaults int64
}

func readProcCPU(pid int) procCPU {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procCPU{}
	}
	// The command name (field 2) may hold spaces: the fields after it
	// start past its closing parenthesis, at field 3.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procCPU{}
	}
	f := strings.Fields(string(b[i+1:]))
	field := func(n int) int64 { // n: the field's number in proc(5)
		if n-3 >= len(f) {
			return 0
		}
		v, _ := strconv.ParseInt(f[n-3], 10, 64)
		return v
	}
	const tick = 10 * time.Millisecond
	utime, stime := field(14), field(15)
	return procCPU{cpu: time.Duration(utime+stime) * tick, sys: time.Duration(stime) * tick, minFaults: field(10)}
}

func sumCPU(ps []*benchProc) procCPU {
	var s procCPU
	for _, p := range ps {
		s = s.plus(readProcCPU(p.cmd.Process.Pid))
	}
	return s
}

// plus is the sum of two processes' (or sums') CPU use.
func (c procCPU) plus(d procCPU) procCPU {
	return procCPU{cpu: c.cpu + d.cpu, sys: c.sys + d.sys, minFaults: c.minFaults + d.minFaults}
}

// runtimeSeries are the Go runtime's counters the process rows read from
// the processes' exporter (add_go_metrics): heap allocations, and the
// collector's CPU time with the runtime's total.
var runtimeSeries = []string{
	"go_memstats_alloc_bytes_total", "go_memstats_mallocs_total",
	"go_cpu_classes_gc_total_cpu_seconds_total", "go_cpu_classes_total_cpu_seconds_total",
}

// procMark is one process's reading at one poll: when, its CPU time, and
// its metrics (the runtime's counters among them); ok when it answered.
type procMark struct {
	at  time.Time
	cpu procCPU
	rt  map[string]float64
	ok  bool
}

// sumMarks sums the runtime's counters over the processes: each one's
// reading of marks, or when it did not answer that poll its reading of
// fallback (nil: none); nil when some process has neither.
func sumMarks(marks, fallback []procMark) map[string]float64 {
	sum := map[string]float64{}
	for i, m := range marks {
		if !m.ok && fallback != nil {
			m = fallback[i]
		}
		if !m.ok {
			return nil
		}
		for _, n := range runtimeSeries {
			sum[n] += m.rt[n]
		}
	}
	return sum
}

// quietStart is the start of a window whose first record and last commit
// fell between two polls: every process's last quiet poll (the earliest of
// them as the clock's start, their CPU times and runtime counters summed);
// ok is false when some process never answered before it received.
func quietStart(quiet []procMark) (at time.Time, cpu procCPU, rt map[string]float64, ok bool) {
	for _, q := range quiet {
		if !q.ok {
			return time.Time{}, procCPU{}, nil, false
		}
		if at.IsZero() || q.at.Before(at) {
			at = q.at
		}
		cpu = cpu.plus(q.cpu)
	}
	return at, cpu, sumMarks(quiet, nil), true
}

// runtimeWindow is what the processes allocated, and the collector's share
// of the runtime's CPU time, between two polls' sums of runtimeSeries; ok
// is false when either poll lacks them (a process did not answer it).
func runtimeWindow(a, b map[string]float64) (allocBytes, allocObjs uint64, gcShare float64, ok bool) {
	if a == nil || b == nil {
		return 0, 0, 0, false
	}
	d := func(n string) float64 { return max(b[n]-a[n], 0) }
	if total := d("go_cpu_classes_total_cpu_seconds_total"); total > 0 {
		gcShare = d("go_cpu_classes_gc_total_cpu_seconds_total") / total
	}
	return uint64(d("go_memstats_alloc_bytes_total")), uint64(d("go_memstats_mallocs_total")), gcShare, true
}

// vmHWM is a process's peak resident set (bytes), from /proc.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// runProcesses measures a process row on the loaded topic tp and verifies
// it.
func runProcesses(ctx context.Context, o Options, res Result, tp *loadedTopic, name string) (Result, error) {
	c := res.Config
	if o.Binary == "" {
		return res, errors.New("the process rows need the path of the binary to run (Options.Binary)")
	}
	em, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "127.0.0.1:0", Schema: tp.schema})
	if err != nil {
		return res, fmt.Errorf("starting the emulator: %w", err)
	}
	defer em.Close()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", em.MySQLAddr()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return res, fmt.Errorf("configuring the MySQL client: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	dir, err := os.MkdirTemp("", "bench-processes-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	pipeline := filepath.Join(dir, "pipeline.yaml")
	stream := ProcessPipelineYAML
	if c.Debezium {
		stream = ProcessDebeziumYAML
	}
	yaml := stream(c, o, "bench-"+name, strings.Join(tp.brokers, ","), em.FEURL(), em.MySQLAddr())
	if err := os.WriteFile(pipeline, []byte(yaml), 0o600); err != nil {
		return res, err
	}
	before := em.Counters()

	// Every process starts at once.
	started := time.Now()
	procs := make([]*benchProc, c.Processes)
	errs := make([]error, c.Processes)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = startProc(o.Binary, pipeline, dir, fmt.Sprintf("p%d", i+1), o.ProcessMemLimit)
		}()
	}
	wg.Wait()
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.kill()
			}
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return res, err
	}

	var first, last time.Time
	var cpu0, cpu1 procCPU
	var rt0, rt1 map[string]float64 // the runtime's counters, summed
	// quiet holds each process's last poll answered before it received
	// anything: where its share of the window starts when the first poll
	// that sees a record finds every transaction already committed (a
	// short run polled late on a busy machine), so that the window is an
	// upper bound without the processes' start-up in it.
	quiet := make([]procMark, len(procs))
	var committed, peakBuffered float64
	tick := time.NewTicker(processPoll)
	defer tick.Stop()
	for last.IsZero() {
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("%.0f of %d source transactions committed when the run timed out: %w", committed, res.SourceTxns, ctx.Err())
		case <-tick.C:
		}
		var received, buffered float64
		committed = 0
		marks := make([]procMark, len(procs)) // this poll's, per process
		for i, p := range procs {
			if !p.alive() {
				return res, fmt.Errorf("process %s exited during the run:\n%s", p.id, p.logTail())
			}
			m, err := p.metrics(append([]string{"input_received", "starrocks_txn_source_txns_committed", "starrocks_txn_buffered_bytes"}, runtimeSeries...)...)
			if err != nil {
				continue // a process too busy to answer is asked again
			}
			received += m["input_received"]
			committed += m["starrocks_txn_source_txns_committed"]
			buffered += m["starrocks_txn_buffered_bytes"]
			marks[i] = procMark{at: time.Now(), cpu: readProcCPU(p.cmd.Process.Pid), rt: m, ok: true}
			if first.IsZero() && m["input_received"] == 0 {
				quiet[i] = marks[i]
			}
		}
		now := time.Now()
		peakBuffered = max(peakBuffered, buffered)
		if first.IsZero() && received > 0 {
			if int64(committed) < res.SourceTxns {
				// The window starts now; a process that did not answer
				// counts from its last quiet poll (earlier: an upper bound).
				first, cpu0 = now, sumCPU(procs)
				rt0 = sumMarks(marks, quiet)
			} else if at, cpu, rt, ok := quietStart(quiet); ok {
				first, cpu0, rt0 = at, cpu, rt
			} else {
				// Some process never answered before it received: from
				// the processes' start for the CPU time, and no runtime
				// figures (they would be its start-up's).
				first, cpu0, rt0 = started, procCPU{}, nil
			}
		}
		if !first.IsZero() && int64(committed) >= res.SourceTxns {
			last, cpu1 = now, sumCPU(procs)
			rt1 = sumMarks(marks, nil)
		}
	}
	res.AllocBytes, res.AllocObjects, res.GCShare, res.RuntimeMeasured = runtimeWindow(rt0, rt1)
	res.StartDelay, res.Elapsed = first.Sub(started), last.Sub(first)
	res.CPU, res.Sys, res.MinFaults = cpu1.cpu-cpu0.cpu, cpu1.sys-cpu0.sys, cpu1.minFaults-cpu0.minFaults
	res.PeakBuffered = int64(peakBuffered)
	for _, p := range procs {
		rss := vmHWM(p.cmd.Process.Pid)
		res.PeakRSS = max(res.PeakRSS, rss)
		res.ProcessesRSS += rss
	}
	// The final count, and the replays the exactly_once outputs dropped
	// (a partition moved while the processes joined the group).
	var total, dropped float64
	for _, p := range procs {
		m, err := p.metrics("starrocks_txn_source_txns_committed", "starrocks_txn_replays_dropped")
		if err != nil {
			return res, fmt.Errorf("reading the metrics of process %s: %w", p.id, err)
		}
		total += m["starrocks_txn_source_txns_committed"]
		dropped += m["starrocks_txn_replays_dropped"]
	}
	for _, p := range procs {
		if err := p.stop(); err != nil {
			return res, err
		}
	}
	after := em.Counters()
	res.Loads = (after.Loads + after.StreamLoads) - (before.Loads + before.StreamLoads)
	res.Commits = after.Committed - before.Committed
	res.LatencySource = "-"

	verifyCtx, cancelVerify := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelVerify()
	good, ok, err := verifyTables(verifyCtx, tp, db)
	if err != nil || !good {
		res.Verified, res.Verification = false, ok
		return res, err
	}
	if int64(total) != res.SourceTxns {
		res.Verification = fmt.Sprintf("FAILED: the processes committed %.0f source transactions, the producer %d", total, res.SourceTxns)
		return res, nil
	}
	if c.Debezium {
		// The progress rows of debezium_txn are its own (the transaction
		// topic's position); the tables and the count are what is checked.
		res.Verified = true
		res.Verification = fmt.Sprintf("%s; 1 process committed %.0f source transactions (%.0f replays dropped)", ok, total, dropped)
		return res, nil
	}
	lastEnds, err := LastEndOffsets(verifyCtx, tp.brokers, topicName, tp.records)
	if err != nil {
		return res, fmt.Errorf("reading the END offsets back from Kafka: %w", err)
	}
	bad, err := CheckProgress(verifyCtx, db, workload.Database, lastEnds)
	if err != nil {
		return res, err
	}
	if bad != "" {
		res.Verification = "FAILED: " + bad
		return res, nil
	}
	res.Verified = true
	res.Verification = fmt.Sprintf("%s; %d processes committed %.0f source transactions; %s.%s: %d partitions at their last END offset (%.0f replays dropped)",
		ok, c.Processes, total, workload.Database, ProgressTable, len(lastEnds), dropped)
	return res, nil
}
