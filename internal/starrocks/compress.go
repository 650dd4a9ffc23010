package starrocks

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// Compression names accepted in Config.Compression; they are also the values
// of the `compression` load header.
const (
	CompressionNone = ""
	CompressionGzip = "gzip"
	CompressionLZ4  = "lz4_frame"
)

// Writers are pooled: an LZ4 frame writer holds block buffers of several MB
// and loads are frequent.
var (
	gzipPool = sync.Pool{New: func() any {
		// BestSpeed: loads sit on the commit path, so latency matters more
		// than ratio.
		w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		return w
	}}
	lz4Pool = sync.Pool{New: func() any { return lz4.NewWriter(nil) }}
)

func normalizeCompression(name string) (string, error) {
	switch n := strings.ToLower(strings.TrimSpace(name)); n {
	case CompressionNone, CompressionGzip, CompressionLZ4:
		return n, nil
	case "lz4":
		return CompressionLZ4, nil
	}
	return "", fmt.Errorf("unsupported compression %q: use \"\" (none), %q or %q", name, CompressionGzip, CompressionLZ4)
}

// compressBody returns body compressed with the named codec.
func compressBody(name string, body []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 64)
	switch name {
	case CompressionGzip:
		w := gzipPool.Get().(*gzip.Writer)
		defer func() { w.Reset(io.Discard); gzipPool.Put(w) }()
		w.Reset(&buf)
		if _, err := w.Write(body); err != nil {
			return nil, fmt.Errorf("gzip-compressing load body: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("gzip-compressing load body: %w", err)
		}
	case CompressionLZ4:
		w := lz4Pool.Get().(*lz4.Writer)
		defer func() { w.Reset(io.Discard); lz4Pool.Put(w) }()
		w.Reset(&buf)
		if _, err := w.Write(body); err != nil {
			return nil, fmt.Errorf("lz4-compressing load body: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("lz4-compressing load body: %w", err)
		}
	default:
		return body, nil
	}
	return buf.Bytes(), nil
}
