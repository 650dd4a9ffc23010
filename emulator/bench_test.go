package emulator

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// benchRowBytes is the size of one JSON row in BenchmarkIngest.
const benchRowBytes = 200

// benchBody builds n JSON rows of exactly benchRowBytes bytes each (plus the
// array punctuation), keys from..from+n-1.
func benchBody(table string, from, n int) []byte {
	var b strings.Builder
	b.Grow(n * (benchRowBytes + 1))
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		var row string
		if table == "orders" {
			row = fmt.Sprintf(`{"order_id":%d,"customer_id":%d,"total_amount":"%d.25","order_status":"shipped","updated_at":"2026-11-29 12:00:00","_pad":"`, from+i, (from+i)%9973, i%1000)
		} else {
			row = fmt.Sprintf(`{"order_id":%d,"item_id":1,"product":"widget-%d","quantity":%d,"price":"9.99","_pad":"`, from+i, i%100, 1+i%5)
		}
		b.WriteString(row)
		b.WriteString(strings.Repeat("x", max(0, benchRowBytes-len(row)-2)))
		b.WriteString(`"}`)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// BenchmarkIngest measures the emulator's ingest rate through multi-table
// transactions over real HTTP: per iteration one transaction with one load
// of batch rows to each of two tables, then commit.
//
//	go test ./emulator -run '^$' -bench BenchmarkIngest -benchtime 20x
func BenchmarkIngest(b *testing.B) {
	const batch = 5000
	e := startEmu(b, func(c *Config) { c.ReaperInterval = time.Second })
	hc := &http.Client{Timeout: time.Minute}
	send := func(method, path string, h hdrs, body []byte) {
		req, err := http.NewRequest(method, e.FEURL()+path, strings.NewReader(string(body)))
		if err != nil {
			b.Fatal(err)
		}
		req.SetBasicAuth("root", "")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if !strings.Contains(string(out), `"Status":"OK"`) {
			b.Fatalf("%s: %s", path, out)
		}
	}
	// Bodies are built outside the timed loop; keys grow per iteration so
	// every row is a new row.
	bodies := make([][2][]byte, b.N)
	var bytesPerIter int64
	for i := range bodies {
		bodies[i] = [2][]byte{benchBody("orders", i*batch, batch), benchBody("order_items", i*batch, batch)}
		bytesPerIter = int64(len(bodies[i][0]) + len(bodies[i][1]))
	}
	b.SetBytes(bytesPerIter)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		label := fmt.Sprintf("bench_%d", i)
		send(http.MethodPost, "/api/transaction/begin", multiH("test", label, "timeout", "600"), nil)
		send(http.MethodPut, "/api/transaction/load", jsonLoadH("test", label, "orders"), bodies[i][0])
		send(http.MethodPut, "/api/transaction/load", jsonLoadH("test", label, "order_items"), bodies[i][1])
		send(http.MethodPost, "/api/transaction/commit", multiH("test", label), nil)
	}
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	rows := float64(b.N * 2 * batch)
	b.ReportMetric(rows/elapsed, "rows/s")
	b.ReportMetric(float64(bytesPerIter)*float64(b.N)/elapsed/(1<<20), "MB/s")
	if got := e.Counters().Rows; got != int64(rows) {
		b.Fatalf("%d rows committed, want %d", got, int64(rows))
	}
}
