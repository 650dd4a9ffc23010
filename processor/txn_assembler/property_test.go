package txnassembler

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"pgregory.net/rapid"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// genRow is one generated data row.
type genRow struct {
	ID    int    `json:"id"`
	Table string `json:"-"`
	Del   bool   `json:"-"`
}

// genTxn is a source transaction as the model expects it to be committed.
type genTxn struct {
	ID   string
	Rows []genRow
}

// genEvent is one source event of a partition.
type genEvent struct {
	kind eventKind
	txn  string
	row  genRow
}

// genPartition draws the event sequence of one partition and the
// transactions that must come out committed, in order.
func genPartition(t *rapid.T, name string, custom bool, nextRow *int) ([]genEvent, []genTxn) {
	var events []genEvent
	var committed []genTxn
	nTxns := rapid.IntRange(1, 6).Draw(t, name+"/txns")
	// mustBegin is set when the previous transaction is to be aborted by
	// the next one's BEGIN.
	mustBegin := false
	for j := 0; j < nTxns; j++ {
		id := fmt.Sprintf("%s-t%d", name, j)
		last := j == nTxns-1
		fate := rapid.SampledFrom([]string{"commit", "commit", "commit", "abort", "open"}).Draw(t, name+"/fate")
		if fate == "open" && !last {
			fate = "commit"
		}
		if fate == "abort" && last {
			// Nothing follows to restart it: it just stays open.
			fate = "open"
		}
		explicit := mustBegin || rapid.Bool().Draw(t, name+"/explicit")
		nRows := rapid.IntRange(0, 4).Draw(t, name+"/rows")
		if !explicit && nRows == 0 {
			nRows = 1 // an implicit begin needs a row
		}
		endInRow := custom && fate == "commit" && nRows > 0 && rapid.Bool().Draw(t, name+"/dataEnd")
		resendAt := -1
		if explicit && rapid.IntRange(0, 3).Draw(t, name+"/resend") == 0 {
			// A re-sent BEGIN comes while the transaction is open: before
			// a row, or before a separate END.
			maxAt := nRows
			if endInRow {
				maxAt = nRows - 1
			}
			resendAt = rapid.IntRange(0, maxAt).Draw(t, name+"/resendAt")
		}
		if explicit {
			events = append(events, genEvent{kind: kindBegin, txn: id})
		}
		var rows []genRow
		for r := 0; r < nRows; r++ {
			if r == resendAt {
				events = append(events, genEvent{kind: kindBegin, txn: id})
			}
			*nextRow++
			row := genRow{
				ID:    *nextRow,
				Table: rapid.SampledFrom([]string{"orders", "order_items", "order_events"}).Draw(t, name+"/table"),
				Del:   rapid.IntRange(0, 4).Draw(t, name+"/del") == 0,
			}
			rows = append(rows, row)
			kind := kindData
			if endInRow && r == nRows-1 {
				kind = kindDataEnd
			}
			events = append(events, genEvent{kind: kind, txn: id, row: row})
		}
		if resendAt == nRows {
			events = append(events, genEvent{kind: kindBegin, txn: id})
		}
		mustBegin = fate == "abort"
		if fate == "commit" {
			if !endInRow {
				events = append(events, genEvent{kind: kindEnd, txn: id})
			}
			committed = append(committed, genTxn{ID: id, Rows: rows})
		}
	}
	return events, committed
}

func (e genEvent) body(partition int, custom bool) string {
	var v map[string]any
	if custom {
		kind := e.kind.String()
		v = map[string]any{"kind": kind, "txn_id": e.txn}
		if e.kind.isData() {
			v["database"] = "test"
			v["table"] = e.row.Table
			v["row"] = e.row
			v["delete"] = e.row.Del
		}
	} else {
		typ := map[eventKind]string{kindBegin: "TXN_BEGIN", kindData: "DATA", kindEnd: "TXN_END"}[e.kind]
		v = map[string]any{"partition": partition, "txnId": e.txn, "type": typ}
		if e.kind == kindData {
			js, _ := json.Marshal(e.row)
			v["database"] = "test"
			v["table"] = e.row.Table
			v["json"] = string(js)
			if e.row.Del {
				v["op"] = "DELETE"
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// outputModel applies the boundary rules of the starrocks_txn output: per
// partition an open-transaction buffer; rows accumulate, an END commits them,
// an abort marker discards them.
type outputModel struct {
	t         *rapid.T
	seq       int64
	seqSource string
	lastOff   map[string]int64
	open      map[string]*genTxn
	committed map[string][]genTxn
	replays   int
}

func (m *outputModel) apply(msg *service.Message) {
	t := m.t
	c, err := contract.Read(msg)
	if err != nil {
		t.Fatalf("unreadable contract: %v", err)
	}
	m.seq++
	if !c.HasSeq || c.Seq != m.seq {
		t.Fatalf("seq %d (has %v), want %d: seqs must be dense", c.Seq, c.HasSeq, m.seq)
	}
	if err := msg.GetError(); err != nil {
		// Only a replayed message may be flagged in a valid stream; the
		// output never applies it (its offset is at or below the mark).
		last, seen := m.lastOff[c.Partition]
		if !c.HasOffset || !seen || c.SourceOffset > last || c.TxnEnd || c.TxnAbort {
			t.Fatalf("a valid stream produced an error: %v (contract %+v)", err, c)
		}
		m.replays++
		return
	}
	if m.seqSource == "" {
		m.seqSource = c.SeqSource
	}
	if c.SeqSource != m.seqSource || c.SeqSource == "" {
		t.Fatalf("seq source %q, want %q", c.SeqSource, m.seqSource)
	}
	if c.Partition == "" || c.TxnID == "" || !c.HasOffset {
		t.Fatalf("incomplete contract %+v", c)
	}
	if last, seen := m.lastOff[c.Partition]; seen && c.SourceOffset <= last {
		t.Fatalf("partition %s: offset %d after %d", c.Partition, c.SourceOffset, last)
	}
	m.lastOff[c.Partition] = c.SourceOffset

	body, _ := msg.AsBytes()
	if c.TxnAbort {
		if !c.Marker || len(body) != 0 || c.TxnEnd {
			t.Fatalf("abort must be a body-less marker: %+v %q", c, body)
		}
		if o := m.open[c.Partition]; o != nil && o.ID != c.TxnID {
			t.Fatalf("abort names %q, open is %q", c.TxnID, o.ID)
		}
		delete(m.open, c.Partition)
		return
	}
	o := m.open[c.Partition]
	if o == nil {
		o = &genTxn{ID: c.TxnID}
		m.open[c.Partition] = o
	}
	if o.ID != c.TxnID {
		t.Fatalf("partition %s: message of %q while %q is open", c.Partition, c.TxnID, o.ID)
	}
	if c.Marker {
		if len(body) != 0 || !c.TxnEnd {
			t.Fatalf("a marker here is a body-less END: %+v %q", c, body)
		}
	} else {
		var r map[string]any
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("row body %q: %v", body, err)
		}
		if c.Database != "test" || c.Table == "" {
			t.Fatalf("row target %q.%q", c.Database, c.Table)
		}
		op, _ := r[contract.OpField].(float64)
		if op != 0 && op != 1 {
			t.Fatalf("row %q: __op must be 0 or 1", body)
		}
		id, _ := r["id"].(float64)
		o.Rows = append(o.Rows, genRow{ID: int(id), Table: c.Table, Del: op == 1})
	}
	if c.TxnEnd {
		m.committed[c.Partition] = append(m.committed[c.Partition], *o)
		delete(m.open, c.Partition)
	}
}

func TestPropertyInterleavedPartitions(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		custom := rapid.Bool().Draw(t, "custom")
		conf := `format: envelope`
		if custom {
			conf = `format: custom`
		}
		spec, err := processorSpec().ParseYAML(conf, nil)
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		p, err := newFromConfig(spec, service.MockResources())
		if err != nil {
			t.Fatalf("constructing: %v", err)
		}

		type stream struct {
			topic   string
			part    int32
			events  []genEvent
			next    int
			offset  int64
			partKey string
		}
		var streams []*stream
		want := map[string][]genTxn{}
		nextRow := 0
		nTopics := rapid.IntRange(1, 2).Draw(t, "topics")
		for ti := 0; ti < nTopics; ti++ {
			nParts := rapid.IntRange(1, 3).Draw(t, "partitions")
			for pi := 0; pi < nParts; pi++ {
				s := &stream{topic: fmt.Sprintf("topic%d", ti), part: int32(pi)}
				s.partKey = contract.KafkaPartition(s.topic, s.part)
				s.offset = rapid.Int64Range(0, 1000).Draw(t, "firstOffset")
				var committed []genTxn
				s.events, committed = genPartition(t, s.partKey, custom, &nextRow)
				want[s.partKey] = committed
				streams = append(streams, s)
			}
		}

		// Interleave the partitions at random, keeping each one's order, and
		// cut the result into batches of random sizes.
		var all []*service.Message
		for {
			var live []*stream
			for _, s := range streams {
				if s.next < len(s.events) {
					live = append(live, s)
				}
			}
			if len(live) == 0 {
				break
			}
			s := live[rapid.IntRange(0, len(live)-1).Draw(t, "pick")]
			e := s.events[s.next]
			s.next++
			all = append(all, kafkaMsg(s.topic, s.part, s.offset, e.body(int(s.part), custom)))
			s.offset += rapid.Int64Range(1, 3).Draw(t, "gap")
		}

		model := &outputModel{t: t, lastOff: map[string]int64{}, open: map[string]*genTxn{}, committed: map[string][]genTxn{}}
		process := func(batch service.MessageBatch) {
			out, err := p.ProcessBatch(context.Background(), batch)
			if err != nil {
				t.Fatalf("ProcessBatch: %v", err)
			}
			if len(out) > 1 {
				t.Fatalf("%d batches out for one in", len(out))
			}
			for _, b := range out {
				if len(b) == 0 {
					t.Fatalf("empty batch returned")
				}
				for _, msg := range b {
					model.apply(msg)
				}
			}
		}
		// With nack replays on, Benthos re-injects earlier batches through
		// the processor later and out of order.
		replays := rapid.Bool().Draw(t, "replays")
		var done []service.MessageBatch
		for len(all) > 0 {
			n := rapid.IntRange(1, min(8, len(all))).Draw(t, "batch")
			batch := service.MessageBatch(all[:n])
			all = all[n:]
			process(batch)
			done = append(done, batch)
			if replays && rapid.IntRange(0, 3).Draw(t, "replay") == 0 {
				process(done[rapid.IntRange(0, len(done)-1).Draw(t, "replayed")])
			}
		}

		for _, s := range streams {
			got := model.committed[s.partKey]
			exp := want[s.partKey]
			if fmt.Sprint(normaliseTxns(got)) != fmt.Sprint(normaliseTxns(exp)) {
				t.Fatalf("partition %s committed\n got %v\nwant %v", s.partKey, got, exp)
			}
		}
	})
}

func normaliseTxns(txns []genTxn) []genTxn {
	out := make([]genTxn, len(txns))
	for i, x := range txns {
		out[i] = genTxn{ID: x.ID, Rows: append([]genRow{}, x.Rows...)}
		if out[i].Rows == nil {
			out[i].Rows = []genRow{}
		}
	}
	return out
}
