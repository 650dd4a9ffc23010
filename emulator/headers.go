package emulator

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/starrocks-txn/benthos-starrocks/emulator/store"
)

// Request headers: the label rule, the data headers every load of a table must repeat, the
// body compressions and the timeout header.

// labelRe is FeNameFormat's label rule.
var labelRe = regexp.MustCompile(`^[-\w]{1,128}$`)

func labelFormatMsg(label string) string {
	return fmt.Sprintf("Label format error. regex: %s, label: %s", labelRe.String(), label)
}

// dataHeaderNames are the stream-load data headers; every load of a table
// in one transaction must carry the same values.
var dataHeaderNames = []string{
	"format", "columns", "where", "column_separator", "row_delimiter", "skip_header", "trim_space",
	"enclose", "escape", "max_filter_ratio", "timeout", "partitions", "temporary_partitions",
	"negative", "strict_mode", "timezone", "load_mem_limit", "exec_mem_limit", "jsonpaths",
	"json_root", "strip_outer_array", "envelope", "partial_update", "partial_update_mode",
	"transmission_compression_type", "load_dop", "enable_replicated_storage", "merge_condition",
	"log_rejected_record_num", "compression", "warehouse", "ignore_json_size",
}

func dataHeaders(r *http.Request) map[string]string {
	h := map[string]string{}
	for _, n := range dataHeaderNames {
		if vs, ok := r.Header[http.CanonicalHeaderKey(n)]; ok && len(vs) > 0 {
			h[n] = vs[0]
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" {
		h["content-encoding"] = ce
	}
	return h
}

// parsedHeaders are the data headers ParseLoadParams turns into a
// store.LoadParams field; sameParams compares those through the parsed
// value.
var parsedHeaders = map[string]bool{
	"format": true, "columns": true, "where": true, "column_separator": true, "row_delimiter": true,
	"skip_header": true, "trim_space": true, "enclose": true, "escape": true, "max_filter_ratio": true,
	"jsonpaths": true, "json_root": true, "strip_outer_array": true, "strict_mode": true,
	"partial_update": true, "timezone": true, "merge_condition": true,
}

// otherParams normalises the data headers without a LoadParams field the
// way the BE parses them: booleans by value (case-insensitive "true"),
// enum-like values case-insensitively, the payload compression whichever
// header (compression or Content-Encoding) sets it. Empty values and
// false booleans are the defaults and are left out.
func otherParams(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		if parsedHeaders[k] {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "ignore_json_size", "negative", "enable_replicated_storage":
			if !strings.EqualFold(v, "true") {
				continue
			}
			v = "true"
		case "compression", "content-encoding":
			k, v = "compression", strings.ToLower(v)
		case "partial_update_mode", "transmission_compression_type":
			v = strings.ToLower(v)
		}
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// sameParams tells whether a load's parsed parameters equal those of the
// context's first load, as the BE compares its cached parsed request (so
// strip_outer_array "TRUE" equals "true", an absent header equals its
// default).
func sameParams(p store.LoadParams, h map[string]string, firstP store.LoadParams, first map[string]string) bool {
	return reflect.DeepEqual(p, firstP) && maps.Equal(otherParams(h), otherParams(first))
}

// checkCompression validates the payload compression headers.
func checkCompression(h map[string]string) error {
	c, ce := h["compression"], h["content-encoding"]
	if c != "" && ce != "" {
		return errors.New("Only one of http header content-encoding and compression can be set")
	}
	if c == "" {
		c = ce
	}
	switch strings.ToLower(c) {
	case "", "gzip", "lz4_frame", "zstd":
		return nil
	}
	return fmt.Errorf("Unsupported compression type: %s", c)
}

// decompress undoes the payload compression named by the headers.
func decompress(h map[string]string, body []byte) ([]byte, error) {
	c := h["compression"]
	if c == "" {
		c = h["content-encoding"]
	}
	var rd io.Reader
	switch strings.ToLower(c) {
	case "":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the gzip body: %w", err)
		}
		rd = zr
	case "lz4_frame":
		rd = lz4.NewReader(bytes.NewReader(body))
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("decompressing the zstd body: %w", err)
		}
		defer zr.Close()
		rd = zr
	default:
		return nil, fmt.Errorf("Unsupported compression type: %s", c)
	}
	out, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("decompressing the %s body: %w", c, err)
	}
	return out, nil
}

// parseTimeout parses the `timeout` header the FE way (Long.parseLong of
// seconds); the error is the Java exception text.
func parseTimeout(v string) (time.Duration, string) {
	if v == "" {
		return 0, ""
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("class java.lang.NumberFormatException: For input string: %q", v)
	}
	return time.Duration(n) * time.Second, ""
}
