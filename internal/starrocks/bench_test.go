package starrocks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkLoad measures one Load round trip (FE 307 → BE) of a 1 MiB JSON
// body through the client, per compression codec.
func BenchmarkLoad(b *testing.B) {
	var row bytes.Buffer
	for i := 0; row.Len() < 1<<20; i++ {
		fmt.Fprintf(&row, `{"order_id":%d,"customer_id":%d,"order_status":"shipped","total_amount":"%d.50"},`, i, i%977, i%1000)
	}
	body := row.Bytes()
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, `{"Status":"OK","Message":""}`)
	}))
	defer be.Close()
	fe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", be.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer fe.Close()
	for _, comp := range []string{CompressionNone, CompressionGzip, CompressionLZ4} {
		b.Run("compression="+comp, func(b *testing.B) {
			c, err := New(Config{LoadURLs: []string{fe.URL}, Username: "root", Compression: comp})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := LoadRequest{
				Txn:     Txn{DB: "shop", Table: "orders", Label: "bench", Multi: true},
				Headers: map[string]string{"format": "json", "strip_outer_array": "true"},
				Body:    body,
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Load(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
