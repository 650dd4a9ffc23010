package emulator

import (
	"compress/gzip"
	"io"

	"github.com/pierrec/lz4/v4"
)

func newGzipWriter(w io.Writer) io.WriteCloser { return gzip.NewWriter(w) }

func newLZ4Writer(w io.Writer) io.WriteCloser { return lz4.NewWriter(w) }
