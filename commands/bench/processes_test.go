package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// --processes N adds, on the first topic only, a row with one process and
// one with N (one when N is 1).
func TestProcessRowsPerTopic(t *testing.T) {
	o := Options{Partitions: []int{4, 64}, Tables: []int{3}, Processes: 3}
	ts := Topics(o)
	var got []int
	dbz := 0
	for _, c := range Configs(o, ts[0]) {
		if c.Kind == KindProcesses {
			assert.Equal(t, SemanticExactlyOnce, c.Semantic)
			if c.Debezium {
				dbz++
				assert.Equal(t, 1, c.Processes, "a connector is read by one process")
				assert.Equal(t, debeziumProcessName(""), c.Name)
				continue
			}
			assert.Equal(t, processesName(c.Processes, ""), c.Name)
			got = append(got, c.Processes)
		}
	}
	assert.Equal(t, []int{1, 3}, got)
	assert.Equal(t, 1, dbz, "one Debezium process row")
	for _, tp := range ts[1:] {
		for _, c := range Configs(o, tp) {
			assert.NotEqual(t, KindProcesses, c.Kind, "%s: only the first topic", tp)
		}
	}
	o.Processes = 1
	n := 0
	for _, c := range Configs(o, ts[0]) {
		if c.Kind == KindProcesses && !c.Debezium {
			n++
		}
	}
	assert.Equal(t, 1, n)
	o.Kinds = []string{KindProcesses}
	assert.Len(t, Configs(o, ts[0]), 2, "--only processes: one process and the Debezium process")

	app := &cli.App{Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}, Commands: []*cli.Command{Command(Schema)}}
	err := app.Run([]string{"bin", "bench", "--quick", "--processes", "-2"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--processes")
}

// The process rows run the real binary: one process, then two in one
// consumer group, each from the outside alike, each verified (the tables,
// the processes' commit count, the progress table at every partition's
// last END), and the summary sets the two side by side; the Debezium
// process row runs debezium_txn alike, one process, beside them.
func TestProcessRowsRunTheBinaryInOneGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := filepath.Join(t.TempDir(), "benthos-starrocks")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = "../.."
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the binary: %s", out)

	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, err := Run(ctx, Options{Txns: QuickTxns, Kinds: []string{KindProcesses}, Processes: 2, Binary: bin,
		Progress: func(s string) { progress.WriteString(s + "\n") }})
	require.NoError(t, err, progress.String())
	require.Len(t, rs, 3)
	measured := 0
	for i, r := range rs {
		assert.True(t, r.Verified, "%s: %s", r.Name, r.Verification)
		if r.Debezium {
			assert.Equal(t, 1, r.Processes)
			assert.Contains(t, r.Verification, "1 process committed 600 source transactions")
			assert.Equal(t, r.Rows, r.Records, "a Debezium row's records are its rows")
		} else {
			assert.Equal(t, i+1, r.Processes)
			assert.Contains(t, r.Verification, "processes committed 600 source transactions")
			assert.Contains(t, r.Verification, "4 partitions at their last END offset")
		}
		// Read from the processes' runtime metrics at both ends of the
		// window (a process too busy to answer an end's poll leaves the
		// row without them: TestProcessWindowStart).
		if r.RuntimeMeasured {
			measured++
			assert.Greater(t, r.BytesPerRecord(), 100.0, "%s: the processes' allocations over the window", r.Name)
			assert.Greater(t, r.AllocsPerRecord(), 1.0, r.Name)
			// Not the start-up's: a row's window never starts before
			// its processes' last poll with nothing received.
			assert.Less(t, r.BytesPerRecord(), 20_000.0, r.Name)
		}
		assert.Positive(t, r.RowsPerSec(), r.Name)
		assert.Positive(t, r.CPU, "%s: the processes' CPU time over the window", r.Name)
		assert.Positive(t, r.PeakRSS, r.Name)
		assert.GreaterOrEqual(t, r.ProcessesRSS, r.PeakRSS, r.Name)
		assert.Positive(t, r.Commits, r.Name)
		assert.Positive(t, r.Loads, r.Name)
	}
	assert.Positive(t, measured, "at least one row's runtime figures were read")
	var table bytes.Buffer
	WriteTable(&table, rs)
	t.Log("\n" + progress.String() + table.String())
	assert.Contains(t, table.String(), "2 OS processes ÷ 1 (exactly_once, one consumer group, 4 partitions, this run): ")
	assert.Contains(t, table.String(), "per process (Σ ")
	assert.Contains(t, table.String(), "debezium_txn ÷ kafka_txn → txn_assembler, 1 OS process each (exactly_once, 4 partitions, this run): ")
	for i, row := range tableRows(t, table.String())[1:] {
		assert.Equal(t, "yes", row[len(row)-1])
		if rs[i].RuntimeMeasured {
			assert.NotEqual(t, "-", row[6], "allocations from the processes' metrics")
		} else {
			assert.Equal(t, "-", row[6], "no figure where the window's ends were not both read")
		}
	}
	assert.True(t, strings.Contains(table.String(), "measured from the outside"), "the table says how the process rows are measured")
}

// --process-memlimit: checked as the Go runtime reads GOMEMLIMIT, refused
// without --processes, named in the rows, and set in the processes'
// environment over one the bench inherited (a real child reads it).
func TestProcessMemLimit(t *testing.T) {
	for s, want := range map[string]int64{"400MiB": 400 << 20, "1GiB": 1 << 30, "123": 123, "64KiB": 64 << 10, "2TiB": 2 << 40, "10B": 10, "off": -1} {
		got, err := ParseMemLimit(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "400M", "400mib", "-1MiB", "+5MiB", "MiB", "1.5GiB", "9999999999TiB"} {
		_, err := ParseMemLimit(s)
		assert.Error(t, err, "%q", s)
	}

	o := Options{Partitions: []int{4}, Processes: 2, ProcessMemLimit: "300MiB"}
	var names []string
	for _, c := range Configs(o, Topics(o)[0]) {
		if c.Kind == KindProcesses {
			names = append(names, c.Name)
		}
	}
	assert.Equal(t, []string{processesName(1, "300MiB"), processesName(2, "300MiB"), debeziumProcessName("300MiB")}, names)
	assert.True(t, strings.HasSuffix(names[0], "1 OS process, GOMEMLIMIT=300MiB"), names[0])

	env := processEnv([]string{"PATH=/usr/bin:/bin", "GOMEMLIMIT=1GiB"}, "p1", "127.0.0.1:1", "300MiB")
	cmd := exec.Command("/bin/sh", "-c", `printf '%s %s %s' "$GOMEMLIMIT" "$BENCH_MEMBER" "$BENCH_HTTP"`)
	cmd.Env = env
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "300MiB p1 127.0.0.1:1", string(out))
	cmd = exec.Command("/bin/sh", "-c", `printf '%s' "$GOMEMLIMIT"`)
	cmd.Env = processEnv([]string{"PATH=/usr/bin:/bin", "GOMEMLIMIT=1GiB"}, "p1", "127.0.0.1:1", "")
	out, err = cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "1GiB", string(out), "no limit set: the inherited one stays")

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--quick", "--process-memlimit", "300MiB"}, "--processes, which is not set"},
		{[]string{"--quick", "--processes", "1", "--process-memlimit", "300 MiB"}, "is not a memory limit"},
		{[]string{"--quick", "--processes", "1", "--process-memlimit", "300mebi"}, "is not a memory limit"},
	} {
		args := tc.args
		msg := tc.msg
		app := &cli.App{Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}, Commands: []*cli.Command{Command(Schema)}}
		err := app.Run(append([]string{"bin", "bench"}, args...))
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), msg, args)
	}
}

// The runtime's figures of a process row are the difference of the two
// polls' sums; a poll that lacks them (a process did not answer) gives
// none rather than a figure of part of the processes.
func TestRuntimeWindow(t *testing.T) {
	a := map[string]float64{"go_memstats_alloc_bytes_total": 1000, "go_memstats_mallocs_total": 10,
		"go_cpu_classes_gc_total_cpu_seconds_total": 1, "go_cpu_classes_total_cpu_seconds_total": 10}
	b := map[string]float64{"go_memstats_alloc_bytes_total": 5000, "go_memstats_mallocs_total": 50,
		"go_cpu_classes_gc_total_cpu_seconds_total": 2, "go_cpu_classes_total_cpu_seconds_total": 14}
	bytes, objs, gc, ok := runtimeWindow(a, b)
	require.True(t, ok)
	assert.Equal(t, uint64(4000), bytes)
	assert.Equal(t, uint64(40), objs)
	assert.InDelta(t, 0.25, gc, 1e-9)
	_, _, _, ok = runtimeWindow(nil, b)
	assert.False(t, ok)
	_, _, _, ok = runtimeWindow(a, nil)
	assert.False(t, ok)

	m := sumSeries([]byte("# TYPE go_memstats_alloc_bytes_total counter\ngo_memstats_alloc_bytes_total 1.5e+06\ngo_cpu_classes_gc_total_cpu_seconds_total 0.25\n"), runtimeSeries...)
	assert.Equal(t, 1.5e6, m["go_memstats_alloc_bytes_total"])
	assert.Equal(t, 0.25, m["go_cpu_classes_gc_total_cpu_seconds_total"])
}

// The Debezium process row's summary line gives allocations per row only
// for a row whose runtime figures were read at both ends of its window: a
// row whose processes did not answer one of those polls has none, and the
// line says so rather than "0 B allocated".
func TestSummaryOfTheDebeziumProcessRowWithoutRuntimeFigures(t *testing.T) {
	four := Topic{Partitions: 4}
	mk := func(dbz, measured bool, alloc uint64) Result {
		return Result{Config: Config{Topic: four, Kind: KindProcesses, Semantic: SemanticExactlyOnce, Processes: 1, Debezium: dbz},
			Records: 1000, Rows: 500, Elapsed: time.Second, CPU: 500 * time.Millisecond, AllocBytes: alloc, RuntimeMeasured: measured}
	}
	line := func(rs ...Result) string {
		for _, l := range Summary(rs) {
			if strings.HasPrefix(l, "debezium_txn ÷ kafka_txn") {
				return l
			}
		}
		t.Fatalf("no Debezium line in %q", Summary(rs))
		return ""
	}
	assert.True(t, strings.HasSuffix(line(mk(false, true, 500_000), mk(true, true, 250_000)), "per row 1000.00 ÷ 1000.00 µs CPU, 500 ÷ 1000 B allocated"))
	l := line(mk(false, true, 500_000), mk(true, false, 0))
	assert.NotContains(t, l, " 0 ÷ 1000 B allocated", "an unmeasured row's allocations are not 0")
	assert.True(t, strings.HasSuffix(l, "- ÷ 1000 B allocated"), l)
	l = line(mk(false, false, 0), mk(true, true, 250_000))
	assert.True(t, strings.HasSuffix(l, "500 ÷ - B allocated"), l)

	// The progress line alike.
	p := processProgress(mk(true, false, 0))
	assert.NotContains(t, p, "0 B in 0.0 allocations", p)
	assert.NotContains(t, p, "GC 0 %", p)
	assert.Contains(t, p, "no allocation or GC figures", p)
	assert.Contains(t, processProgress(mk(true, true, 250_000)), "250 B in 0.0 allocations per record, GC 0 %")
}

// The window's start of a process row: at the first poll that sees a
// record, each process's reading there, or for one that did not answer it,
// its last poll with nothing received; when that poll already finds every
// transaction committed, every process's last quiet poll — never the
// processes' start, whose allocations would be the figures.
func TestProcessWindowStart(t *testing.T) {
	at := time.Unix(100, 0)
	mark := func(sec int, alloc float64) procMark {
		return procMark{at: at.Add(time.Duration(sec) * time.Second), cpu: procCPU{cpu: time.Duration(sec) * time.Second},
			rt: map[string]float64{"go_memstats_alloc_bytes_total": alloc, "go_memstats_mallocs_total": alloc / 100}, ok: true}
	}
	quiet := []procMark{mark(1, 1000), mark(2, 3000)}
	now := []procMark{mark(3, 5000), {}}
	got := sumMarks(now, quiet)
	assert.Equal(t, 5000.0+3000, got["go_memstats_alloc_bytes_total"], "the silent process from its last quiet poll")
	assert.Nil(t, sumMarks(now, nil), "no reading of a process: none")
	assert.Nil(t, sumMarks(now, []procMark{{}, {}}))

	start, cpu, rt, ok := quietStart(quiet)
	require.True(t, ok)
	assert.Equal(t, at.Add(time.Second), start, "the earliest quiet poll")
	assert.Equal(t, 3*time.Second, cpu.cpu)
	assert.Equal(t, 4000.0, rt["go_memstats_alloc_bytes_total"])
	_, _, _, ok = quietStart([]procMark{mark(1, 1000), {}})
	assert.False(t, ok, "a process that never answered before it received")
}
