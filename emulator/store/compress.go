package store

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressed bounds a decompressed CSV body (the BE's streaming_load_max_mb default is
// 10 GB; the emulator keeps bodies in memory, so it stops far earlier).
const maxDecompressed = 1 << 30

// decompressCSV inflates the body of the compressed CSV formats (format=gzip|bzip2|deflate|
// lz4|zstd; lz4 is the LZ4 frame format, deflate the zlib stream).
func decompressCSV(format string, body []byte) ([]byte, error) {
	var r io.Reader
	switch format {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the format=gzip body: %w", err)
		}
		r = zr
	case "bzip2":
		r = bzip2.NewReader(bytes.NewReader(body))
	case "deflate":
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the format=deflate body: %w", err)
		}
		r = zr
	case "lz4":
		r = lz4.NewReader(bytes.NewReader(body))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the format=zstd body: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, fmt.Errorf("unknown data format, format=%s", format)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressed+1))
	if err != nil {
		return nil, fmt.Errorf("decompressing the format=%s body: %w", format, err)
	}
	if len(out) > maxDecompressed {
		return nil, fmt.Errorf("the format=%s body inflates to more than %d bytes", format, maxDecompressed)
	}
	return out, nil
}
