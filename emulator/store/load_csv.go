package store

import (
	"bytes"
	"fmt"
)

// CSV streams. The BE feeds every body of one (label, table) into one pipe, and its CSV
// reader sees a single stream: a body that does not end with the row delimiter leaves its
// last record open, and the next body's first bytes continue it (so "1,alice" then "2,bob"
// make the one record "1,alice2,bob"). The end of the stream, at prepare or commit (or the
// end of a plain stream load's body), ends the last record. skip_header skips the first lines
// of the stream, not of each body. Stream carries the open record from one body to the next.

// Stream is the state of one CSV load stream between its bodies: the open last record and
// how many header lines are still to skip. The zero value is a stream that has not started.
// A Stream is used by one load at a time.
type Stream struct {
	rest    []byte
	started bool
	skip    int
	// sc is the table's schema when the stream's first body was parsed.
	sc *TableSchema
}

// Pending reports whether the stream holds an open record that EndStream will end.
func (st *Stream) Pending() bool { return len(st.rest) > 0 }

func (b *rowBuilder) csvDelims() (rd, sep []byte) {
	rd, sep = []byte(b.p.RowDelimiter), []byte(b.p.ColumnSeparator)
	if len(rd) == 0 {
		rd = []byte("\n")
	}
	if len(sep) == 0 {
		sep = []byte("\t")
	}
	return rd, sep
}

// parseCSV parses the complete records of the stream's open record followed by body and
// keeps the unterminated rest open in st; final ends the stream, so the rest is the last
// record.
func (b *rowBuilder) parseCSV(body []byte, st *Stream, final bool) (*Parsed, error) {
	if !st.started {
		st.started, st.skip = true, b.p.SkipHeader
	}
	rd, sep := b.csvDelims()
	data := body
	if len(st.rest) > 0 {
		data = make([]byte, 0, len(st.rest)+len(body)+len(rd))
		data = append(append(data, st.rest...), body...)
	}
	if final && len(data) > 0 && !bytes.HasSuffix(data, rd) {
		data = append(data[:len(data):len(data)], rd...)
	}
	var consumed int
	if b.p.Enclose != 0 || b.p.Escape != 0 {
		n, inQuote := b.parseCSVQuoted(data, rd, sep, st)
		if final && inQuote {
			st.rest = nil
			return nil, fmt.Errorf("CSV data ends inside an enclosed field: the enclose character %q is not closed", string(b.p.Enclose))
		}
		consumed = n
	} else {
		consumed = b.parseCSVPlain(data, rd, sep, st)
	}
	st.rest = append([]byte(nil), data[consumed:]...)
	if final {
		st.rest = nil
	}
	return b.res, nil
}

// parseCSVPlain converts every complete record of data and returns how many bytes they
// span.
func (b *rowBuilder) parseCSVPlain(data, rd, sep []byte, st *Stream) int {
	pos := 0
	for {
		i := bytes.Index(data[pos:], rd)
		if i < 0 {
			return pos
		}
		line := data[pos : pos+i]
		pos += i + len(rd)
		if st.skip > 0 {
			st.skip--
			continue
		}
		b.csvRow(line, sep)
	}
}

// parseCSVQuoted splits records and fields honouring the enclose and escape characters: an
// enclosed field may hold separators and row delimiters, a doubled enclose character inside
// it is one literal character, and the escape character makes the next byte literal. It
// converts every complete record and returns how many bytes they span, and whether data
// ends inside an enclosed field.
func (b *rowBuilder) parseCSVQuoted(data, rd, sep []byte, st *Stream) (int, bool) {
	enc, esc := b.p.Enclose, b.p.Escape
	var fields [][]byte
	var field []byte
	var quotedField []bool
	inQuote, wasQuoted := false, false
	start := 0
	endField := func() {
		fields = append(fields, field)
		quotedField = append(quotedField, wasQuoted)
		field, wasQuoted = nil, false
	}
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case esc != 0 && c == esc:
			if i+1 >= len(data) {
				// the escaped byte is in the next body: the record stays open
				return start, inQuote
			}
			field = append(field, data[i+1])
			i += 2
			continue
		case enc != 0 && c == enc:
			if inQuote && i+1 < len(data) && data[i+1] == enc {
				field = append(field, enc)
				i += 2
				continue
			}
			if !inQuote && len(bytes.TrimSpace(field)) == 0 {
				field = field[:0]
				inQuote, wasQuoted = true, true
				i++
				continue
			}
			if inQuote {
				inQuote = false
				i++
				// blanks between the closing quote and the separator are not part of the field
				for i < len(data) && (data[i] == ' ' || data[i] == '\t') && !bytes.HasPrefix(data[i:], sep) {
					i++
				}
				continue
			}
		case !inQuote && bytes.HasPrefix(data[i:], sep):
			endField()
			i += len(sep)
			continue
		case !inQuote && bytes.HasPrefix(data[i:], rd):
			endField()
			line := data[start:i]
			i += len(rd)
			start = i
			if st.skip > 0 {
				st.skip--
			} else {
				b.csvFields(line, fields, quotedField)
			}
			fields, quotedField = fields[:0], quotedField[:0]
			continue
		}
		field = append(field, c)
		i++
	}
	return start, inQuote
}

func (b *rowBuilder) csvRow(line, sep []byte) {
	fields := bytes.Split(line, sep)
	b.csvFields(line, fields, nil)
}

// csvFields converts one record's fields; quoted marks enclosed fields (never trimmed, never \N).
func (b *rowBuilder) csvFields(line []byte, fields [][]byte, quoted []bool) {
	b.startRow()
	rowText := func() string { return string(line) }
	if len(fields) != len(b.targets) {
		b.rowError("Value count does not match column count. Expect %d, but got %d", len(b.targets), len(fields))
		b.finishRow(rowText)
		return
	}
	for f, field := range fields {
		isQuoted := quoted != nil && quoted[f]
		if b.p.TrimSpace && !isQuoted {
			field = bytes.TrimSpace(field)
		}
		t := b.targets[f]
		switch {
		case t == targetSkip:
		case t == targetOp:
			b.setOp(string(field))
		case !isQuoted && string(field) == `\N`:
			b.setValue(t, nil, nil, nil)
		default:
			c := &b.sc.Columns[t]
			s := string(field)
			v, err := convertText(c, s)
			b.setValue(t, v, err, func() string { return s })
		}
	}
	if b.derived != nil {
		b.applyDerived(func(i int) (string, bool) {
			if i < 0 || i >= len(fields) {
				return "", false
			}
			return string(fields[i]), true
		})
	}
	b.finishRow(rowText)
}
