package store

import (
	"fmt"
	"strconv"
	"strings"
)

// LoadParams are the stream-load data headers that shape how a body is parsed.
type LoadParams struct {
	Format          string // "json" or "csv"
	CSVCompression  string // format=gzip|bzip2|lz4|deflate|zstd: compressed CSV, inflated by Parse (not the `compression` header)
	StripOuterArray bool
	StrictMode      bool
	Columns         []string // the `columns` header, if any
	JSONPaths       []string
	JSONRoot        string
	ColumnSeparator string // csv, default "\t"
	RowDelimiter    string // csv, default "\n"
	PartialUpdate   bool
	MaxFilterRatio  float64
	Timezone        string
	MergeCondition  string
	Where           string
	SkipHeader      int  // csv: lines skipped at the start of each body
	TrimSpace       bool // csv: trim spaces around fields (outside enclose)
	Enclose         byte // csv: field quote character (0: none)
	Escape          byte // csv: escape character inside fields (0: none)
}

// ParseLoadParams reads the stream-load data headers (names case-insensitive) with the BE's rules
// and error texts. Unknown headers are ignored.
func ParseLoadParams(h map[string]string) (LoadParams, error) {
	get := func(name string) (string, bool) {
		if v, ok := h[name]; ok {
			return v, true
		}
		for k, v := range h {
			if strings.EqualFold(k, name) {
				return v, true
			}
		}
		return "", false
	}
	p := LoadParams{Format: "csv", ColumnSeparator: "\t", RowDelimiter: "\n"}
	if v, ok := get("format"); ok && v != "" {
		switch f := strings.ToLower(v); f {
		case "csv", "json":
			p.Format = f
		case "gzip", "bzip2", "lz4", "deflate", "zstd":
			p.Format = "csv"
			p.CSVCompression = f
		default:
			return p, fmt.Errorf("unknown data format, format=%s", v)
		}
	}
	if v, ok := get("strip_outer_array"); ok {
		p.StripOuterArray = strings.EqualFold(v, "true")
	}
	if v, ok := get("strict_mode"); ok && v != "" {
		switch {
		case strings.EqualFold(v, "true"):
			p.StrictMode = true
		case strings.EqualFold(v, "false"):
			p.StrictMode = false
		default:
			return p, fmt.Errorf("Invalid strict mode format. Must be bool type")
		}
	}
	if v, ok := get("partial_update"); ok {
		p.PartialUpdate = v == "true"
	}
	if v, ok := get("partial_update_mode"); ok && v != "" {
		switch strings.ToLower(v) {
		case "row", "auto", "column":
		default:
			return p, fmt.Errorf("Invalid partial update mode: %s. Must be row, auto or column", v)
		}
	}
	if v, ok := get("max_filter_ratio"); ok && v != "" {
		r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return p, fmt.Errorf("Invalid max_filter_ratio: %s", v)
		}
		p.MaxFilterRatio = r
	}
	if v, ok := get("columns"); ok && strings.TrimSpace(v) != "" {
		cols, err := splitColumnsHeader(v)
		if err != nil {
			return p, err
		}
		p.Columns = cols
	}
	if v, ok := get("jsonpaths"); ok && strings.TrimSpace(v) != "" {
		paths, err := parseJSONPaths(v)
		if err != nil {
			return p, err
		}
		p.JSONPaths = paths
	}
	if v, ok := get("json_root"); ok {
		p.JSONRoot = strings.TrimSpace(v)
	}
	if v, ok := get("column_separator"); ok && v != "" {
		p.ColumnSeparator = unescapeSeparator(v)
	}
	if v, ok := get("row_delimiter"); ok && v != "" {
		p.RowDelimiter = unescapeSeparator(v)
	}
	if v, ok := get("timezone"); ok {
		p.Timezone = v
	}
	if v, ok := get("merge_condition"); ok {
		p.MergeCondition = strings.TrimSpace(v)
	}
	if v, ok := get("skip_header"); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return p, fmt.Errorf("Invalid skip_header: %s: it must be a non-negative integer", v)
		}
		p.SkipHeader = n
	}
	if v, ok := get("trim_space"); ok {
		p.TrimSpace = strings.EqualFold(v, "true")
	}
	if v, ok := get("enclose"); ok && v != "" {
		if len(v) != 1 {
			return p, fmt.Errorf("Invalid enclose: %q: it must be a single byte", v)
		}
		p.Enclose = v[0]
	}
	if v, ok := get("escape"); ok && v != "" {
		if len(v) != 1 {
			return p, fmt.Errorf("Invalid escape: %q: it must be a single byte", v)
		}
		p.Escape = v[0]
	}
	if v, ok := get("where"); ok {
		p.Where = strings.TrimSpace(v)
	}
	return p, nil
}

// splitColumnsHeader splits the `columns` header at commas outside quotes and parentheses.
// Entries are plain names (backquotes removed) or mapping expressions "target = expr" kept
// as written; newRowBuilder decides which expressions it can evaluate.
func splitColumnsHeader(v string) ([]string, error) {
	var out []string
	depth := 0
	var quote byte
	start := 0
	flush := func(end int) error {
		e := strings.TrimSpace(v[start:end])
		if e == "" {
			return fmt.Errorf("columns header %q: empty column name", v)
		}
		if !strings.Contains(e, "=") {
			e = strings.Trim(e, "`")
		}
		out = append(out, e)
		return nil
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			if err := flush(i); err != nil {
				return nil, err
			}
			start = i + 1
		}
	}
	if quote != 0 || depth != 0 {
		return nil, fmt.Errorf("columns header %q: unbalanced quotes or parentheses", v)
	}
	if err := flush(len(v)); err != nil {
		return nil, err
	}
	return out, nil
}

// unescapeSeparator turns the header spellings "\t", "\n", "\x01" and "\\x01" into bytes.
func unescapeSeparator(v string) string {
	switch v {
	case `\t`:
		return "\t"
	case `\n`:
		return "\n"
	case `\r\n`:
		return "\r\n"
	}
	if (strings.HasPrefix(v, `\x`) || strings.HasPrefix(v, `\X`)) && len(v) > 2 && len(v)%2 == 0 {
		var b []byte
		ok := true
		for i := 2; i < len(v); i += 2 {
			n, err := strconv.ParseUint(v[i:i+2], 16, 8)
			if err != nil {
				ok = false
				break
			}
			b = append(b, byte(n))
		}
		if ok {
			return string(b)
		}
	}
	return v
}
