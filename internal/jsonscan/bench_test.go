package jsonscan

import "testing"

var (
	benchEnvelope = []byte(`{"database":"test","json":"{\"customer_id\":4242,\"order_id\":17,\"order_status\":\"created\",\"total_amount\":\"1234.56\",\"updated_at\":\"2026-11-29 12:00:00\"}","partition":1,"table":"orders","txnId":"p1-t17","type":"DATA"}`)
	benchRow      = []byte(`{"__op":1,"customer_id":4242,"order_id":17,"order_status":"created","total_amount":"1234.56","updated_at":"2026-11-29 12:00:00"}`)
	benchFields   = NewFields("partition", "txnId", "type", "database", "table", "json", "op")
)

func BenchmarkFieldsScan(b *testing.B) {
	out := make([]Value, benchFields.Len())
	b.SetBytes(int64(len(benchEnvelope)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if benchFields.Scan(benchEnvelope, out) != OK {
			b.Fatal("not OK")
		}
	}
}

func BenchmarkValid(b *testing.B) {
	b.SetBytes(int64(len(benchRow)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if Valid(benchRow) != OK {
			b.Fatal("not OK")
		}
	}
}

func BenchmarkScanRow(b *testing.B) {
	b.SetBytes(int64(len(benchRow)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if st, row := ScanRow(benchRow, "__op"); st != OK || !row.Canonical {
			b.Fatal("not canonical")
		}
	}
}

func BenchmarkAppendUnquoted(b *testing.B) {
	out := make([]Value, benchFields.Len())
	benchFields.Scan(benchEnvelope, out)
	raw := out[5].Raw
	buf := make([]byte, 0, len(raw))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = AppendUnquoted(buf[:0], raw)
	}
}

// BenchmarkObjectKeys is BenchmarkValid with the row's keys hashed: the
// difference is the hash's cost.
func BenchmarkObjectKeys(b *testing.B) {
	b.SetBytes(int64(len(benchRow)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if st, _ := ObjectKeys(benchRow); st != OK {
			b.Fatal("not OK")
		}
	}
}
