package store

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const benchDDL = `CREATE DATABASE bench;
CREATE TABLE bench.orders (
  order_id BIGINT NOT NULL,
  customer_id BIGINT NOT NULL,
  total_amount DECIMAL(10,2) DEFAULT "0",
  order_status VARCHAR(32) DEFAULT "",
  note VARCHAR(128) NULL,
  updated_at DATETIME NULL
) PRIMARY KEY(order_id) DISTRIBUTED BY HASH(order_id) BUCKETS 4`

// benchBody builds n JSON rows of about 200 bytes each with keys starting at first.
func benchBody(first, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"order_id":%d,"customer_id":%d,"total_amount":"%d.%02d","order_status":"shipped","note":"%s","updated_at":"2024-01-02 03:04:%02d"}`,
			first+i, (first+i)%9973, i%100000, i%100, "customer asked for a gift wrap and a delivery before noon, ring twice", i%60)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// BenchmarkParseApply measures Parse + Apply of 200-byte JSON rows into a PRIMARY KEY
// table, 1000 rows per load and commit.
func BenchmarkParseApply(b *testing.B) {
	s := New()
	require.NoError(b, s.ExecScript(benchDDL))
	const batch = 1000
	p := jsonParams(nil)
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = benchBody(i*batch, batch)
	}
	b.SetBytes(int64(len(bodies[0])))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		res, err := s.Parse("bench", "orders", bodies[i%len(bodies)], p)
		if err != nil || res.Filtered != 0 {
			b.Fatalf("parse: %v %v", err, res.Errors)
		}
		if err := s.Apply([]TableChange{{DB: "bench", Table: "orders", Rows: res.Rows}}); err != nil {
			b.Fatal(err)
		}
	}
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	rows := float64(b.N * batch)
	b.ReportMetric(rows/el.Seconds(), "rows/s")
	b.ReportMetric(float64(el.Nanoseconds())/rows, "ns/row")
	// CPU time (all threads, GC included) per row: stable on a shared, busy machine where
	// wall-clock figures vary with other people's load.
	b.ReportMetric(float64(cpu.Nanoseconds())/rows, "cpu-ns/row")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkApplySmallCommits measures the per-commit cost: two tables of a database holding
// 20 tables get 5 rows each per Apply (many small source transactions committed often).
func BenchmarkApplySmallCommits(b *testing.B) {
	s := New()
	require.NoError(b, s.ExecDDL("CREATE DATABASE bench"))
	for i := 0; i < 20; i++ {
		require.NoError(b, s.ExecDDL(fmt.Sprintf("CREATE TABLE bench.t%d (id BIGINT NOT NULL, v INT) PRIMARY KEY(id)", i)))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var ra, rb []Row
		for j := 0; j < 5; j++ {
			id := int64(i*5 + j)
			ra = append(ra, Row{Values: []any{id, int32(j)}})
			rb = append(rb, Row{Values: []any{id, int32(j)}})
		}
		if err := s.Apply([]TableChange{{DB: "bench", Table: "t3", Rows: ra}, {DB: "bench", Table: "t7", Rows: rb}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkApplyScattered measures commits shaped like the pipeline bench's: a PRIMARY KEY
// table of 200 000 rows takes commits of 6 000 rows each, two in three updating rows at
// random keys (scattered over the whole tree, as the workload updates random orders) and one
// in three new keys at the end. Every commit clones the table (copy-on-write), so what it
// costs is the nodes it touches.
func BenchmarkApplyScattered(b *testing.B) {
	s := New()
	require.NoError(b, s.ExecDDL("CREATE DATABASE bench"))
	require.NoError(b, s.ExecDDL("CREATE TABLE bench.t (id BIGINT NOT NULL, status VARCHAR(32), v BIGINT) PRIMARY KEY(id)"))
	const prefill, perCommit = 200_000, 6_000
	row := func(id int64) Row { return Row{Values: []any{id, "shipped", id * 7}} }
	var rows []Row
	for id := int64(0); id < prefill; id++ {
		rows = append(rows, row(id))
	}
	require.NoError(b, s.Apply([]TableChange{{DB: "bench", Table: "t", Rows: rows}}))
	next := int64(prefill)
	rng := uint64(1)
	rand := func(n int64) int64 { // xorshift: no dependency on math/rand's stream
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return int64(rng % uint64(n))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		rows := make([]Row, 0, perCommit)
		for j := 0; j < perCommit; j++ {
			if j%3 == 2 {
				rows = append(rows, row(next))
				next++
			} else {
				rows = append(rows, row(rand(next)))
			}
		}
		if err := s.Apply([]TableChange{{DB: "bench", Table: "t", Rows: rows}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*perCommit), "cpu-ns/row")
}
