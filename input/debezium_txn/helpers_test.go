package debezium_txn

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	testPrefix   = "shop"
	testTxnTopic = "shop.transaction"
)

// testConfig consumes shop.test.orders and shop.test.items; shop.test.audit
// exists in the source but is not consumed.
func testConfig() assemblerConfig {
	consumed := map[string]bool{"shop.test.orders": true, "shop.test.items": true}
	naming := newTopicNaming(testPrefix, nil)
	return assemblerConfig{
		partition:        testTxnTopic,
		txnTopic:         testTxnTopic,
		topicOf:          naming.topicOf,
		mapped:           naming.mapped,
		consumed:         func(t string) bool { return consumed[t] },
		maxBufferedBytes: 1 << 30,
		missingTimeout:   time.Minute,
		resendWindow:     100,
		untransacted:     untransactedError,
		truncate:         truncateError,
		valueWriter:      valueWriter{loc: time.UTC},
	}
}

// dbzEvent renders a transaction event of table (test.<table>).
func dbzEvent(op byte, table string, id int, txn string, total, dco int) []byte {
	row := fmt.Sprintf(`{"id":%d,"v":"%s-%d"}`, id, txn, total)
	before, after := "null", row
	if op == opDelete {
		before, after = row, "null"
	}
	tb := "null"
	if txn != "" {
		tb = fmt.Sprintf(`{"id":%q,"total_order":%d,"data_collection_order":%d}`, txn, total, dco)
	}
	return []byte(fmt.Sprintf(`{"before":%s,"after":%s,"op":"%c","source":{"connector":"mysql","db":"test","table":%q,"snapshot":"false"},"transaction":%s}`,
		before, after, op, table, tb))
}

// snapRow renders a snapshot row with the given source.snapshot marker.
func snapRow(table string, id int, marker string) []byte {
	return []byte(fmt.Sprintf(`{"before":null,"after":{"id":%d,"v":"snap"},"op":"r","source":{"connector":"mysql","db":"test","table":%q,"snapshot":%q},"transaction":null}`, id, table, marker))
}

// dbzEnd renders an END; counts alternate collection name and count.
func dbzEnd(id string, counts ...any) []byte {
	var cols []string
	total := 0
	for i := 0; i+1 < len(counts); i += 2 {
		n := counts[i+1].(int)
		total += n
		cols = append(cols, fmt.Sprintf(`{"data_collection":%q,"event_count":%d}`, counts[i], n))
	}
	return []byte(fmt.Sprintf(`{"status":"END","id":%q,"ts_ms":1,"event_count":%d,"data_collections":[%s]}`, id, total, strings.Join(cols, ",")))
}

func dbzBegin(id string) []byte {
	return []byte(fmt.Sprintf(`{"status":"BEGIN","id":%q,"event_count":null,"data_collections":null}`, id))
}

var (
	orders0 = tp{"shop.test.orders", 0}
	orders1 = tp{"shop.test.orders", 1}
	items0  = tp{"shop.test.items", 0}
)

// feeder feeds records to an assembler with increasing offsets per
// partition.
type feeder struct {
	t    *testing.T
	a    *assembler
	next map[tp]int64
	txn  int64
	now  time.Time
}

func newFeeder(t *testing.T, cfg assemblerConfig, parts ...tp) *feeder {
	f := &feeder{t: t, a: newAssembler(cfg), next: map[tp]int64{}, now: time.Unix(1_700_000_000, 0)}
	for _, p := range parts {
		f.a.assign(p)
	}
	return f
}

func (f *feeder) data(p tp, v []byte) int64 {
	f.t.Helper()
	off := f.next[p]
	f.next[p]++
	require.NoError(f.t, f.a.addData(recMeta{tp: p, offset: off}, v, f.now))
	return off
}

func (f *feeder) dataErr(p tp, v []byte) error {
	off := f.next[p]
	f.next[p]++
	return f.a.addData(recMeta{tp: p, offset: off}, v, f.now)
}

func (f *feeder) meta(v []byte) int64 {
	f.t.Helper()
	off := f.txn
	f.txn++
	require.NoError(f.t, f.a.addTxnMeta(off, v, f.now))
	return off
}

// drain emits everything that is ready.
func (f *feeder) drain() []*emission {
	var out []*emission
	for {
		em := f.a.next(100)
		if em == nil {
			return out
		}
		out = append(out, em)
	}
}

// rows renders an emission's messages as "partition|txn|offset|end|body".
func rows(em *emission) []string {
	var out []string
	for _, m := range em.msgs {
		var body map[string]any
		_ = json.Unmarshal(m.ev.row, &body)
		out = append(out, fmt.Sprintf("%s|%s|%d|%v|%v", m.partition, m.txnID, m.sourceOffset, m.end, body["v"]))
	}
	return out
}

func txnIDs(ems []*emission) []string {
	var out []string
	for _, em := range ems {
		if em.txn != nil {
			out = append(out, em.txn.id)
		} else {
			for _, m := range em.msgs {
				out = append(out, m.txnID)
			}
		}
	}
	return out
}
