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
	for _, c := range Configs(o, ts[0]) {
		if c.Kind == KindProcesses {
			assert.Equal(t, SemanticExactlyOnce, c.Semantic)
			assert.Equal(t, processesName(c.Processes, ""), c.Name)
			got = append(got, c.Processes)
		}
	}
	assert.Equal(t, []int{1, 3}, got)
	for _, tp := range ts[1:] {
		for _, c := range Configs(o, tp) {
			assert.NotEqual(t, KindProcesses, c.Kind, "%s: only the first topic", tp)
		}
	}
	o.Processes = 1
	n := 0
	for _, c := range Configs(o, ts[0]) {
		if c.Kind == KindProcesses {
			n++
		}
	}
	assert.Equal(t, 1, n)
	o.Kinds = []string{KindProcesses}
	assert.Len(t, Configs(o, ts[0]), 1, "--only processes")

	app := &cli.App{Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}, Commands: []*cli.Command{Command(Schema)}}
	err := app.Run([]string{"bin", "bench", "--quick", "--processes", "-2"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--processes")
}

// The process rows run the real binary: one process, then two in one
// consumer group, each from the outside alike, each verified (the tables,
// the processes' commit count, the progress table at every partition's
// last END), and the summary sets the two side by side.
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
	require.Len(t, rs, 2)
	for i, r := range rs {
		assert.Equal(t, i+1, r.Processes)
		assert.True(t, r.Verified, "%s: %s", r.Name, r.Verification)
		assert.Contains(t, r.Verification, "processes committed 600 source transactions")
		assert.Contains(t, r.Verification, "4 partitions at their last END offset")
		assert.Positive(t, r.RowsPerSec(), r.Name)
		assert.Positive(t, r.CPU, "%s: the processes' CPU time over the window", r.Name)
		assert.Positive(t, r.PeakRSS, r.Name)
		assert.GreaterOrEqual(t, r.ProcessesRSS, r.PeakRSS, r.Name)
		assert.Positive(t, r.Commits, r.Name)
		assert.Positive(t, r.Loads, r.Name)
	}
	var table bytes.Buffer
	WriteTable(&table, rs)
	t.Log("\n" + progress.String() + table.String())
	assert.Contains(t, table.String(), "2 OS processes ÷ 1 (exactly_once, one consumer group, 4 partitions, this run): ")
	assert.Contains(t, table.String(), "per process (Σ ")
	for _, row := range tableRows(t, table.String())[1:] {
		assert.Equal(t, "yes", row[len(row)-1])
		assert.Equal(t, "-", row[6], "no allocation figures from the outside")
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
	assert.Equal(t, []string{processesName(1, "300MiB"), processesName(2, "300MiB")}, names)
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
