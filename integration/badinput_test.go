package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// Bad input, end to end: each class of bad input of the README's table is
// produced to Kafka (its own partition) and read by a real pipeline into the
// emulator: kafka_txn → txn_assembler → starrocks_txn for the envelope
// cases, kafka_txn → a hand-written contract mapping → starrocks_txn for the
// contract cases, one pipeline without dead_letter for the stalls, two with
// a tiny buffer_size. Every case asserts what the user gets (the dead-letter
// reason, a metric, a log line, a stall) and that nothing is lost: the
// poisoned source transaction goes whole to dead_letter and nothing of it is
// visible, and the good transaction after it on the same partition commits
// (or, on a stall, is held — never acknowledged).

// badCase is one class of bad input.
type badCase struct {
	name string
	// pipe is the pipeline that reads the case: env (envelope, dead_letter,
	// mysql_address), map (hand-written contract, dead_letter), stall
	// (envelope, no dead_letter), small and small-txn (envelope,
	// buffer_size 4 KiB), strict (envelope, dead_letter, strict_mode on).
	pipe string
	// records are the Kafka record values, in order, for the case's
	// partition p; order ids are base+1 (the bad transaction, "bad") and
	// base+2 (a good one after it, "good").
	records func(base int64, p int32) []string
	// deadLettered is the number of messages of "bad" that must reach
	// dead_letter (all of them: whole), 0 for none; reason holds
	// substrings of its starrocks_dead_letter_reason.
	deadLettered int
	reason       []string
	// present and absent are order ids, relative to base, that must and
	// must not be in test.orders at the end.
	present, absent []int64
	// metric must be positive on the pipeline (a counter, or a gauge's
	// peak); log must appear in its warnings and errors.
	metric, log string
	// check, when set, asserts more.
	check func(t *testing.T, base int64, w *badWorld)
	// known names a defect of the output that makes the case fail until it
	// is fixed (the case is then skipped unless STARROCKS_TXN_KNOWN_BUGS=1).
	known string
	// hold holds back the last hold records until the pipeline has at
	// least holdBytes buffered (and nothing before the case: it waits for an
	// empty buffer first), so that they are admitted after the records
	// before them — as a fetch spread over time has it. Produced at once,
	// the batches of one fetch are admitted concurrently, in any order:
	// they could all pass the hard cap before any of them is buffered, or a
	// copy of a seq be admitted before its original. log must then appear
	// after the case's first record was produced.
	hold      int
	holdBytes int64
}

// Envelope events.
func envBegin(txn string) string { return fmt.Sprintf(`{"txnId":%q,"type":"TXN_BEGIN"}`, txn) }
func envEnd(txn string) string   { return fmt.Sprintf(`{"txnId":%q,"type":"TXN_END"}`, txn) }
func envData(txn, db, table, row string) string {
	return fmt.Sprintf(`{"txnId":%q,"type":"DATA","database":%q,"table":%q,"json":%q}`, txn, db, table, row)
}
func envOp(txn, db, table, row, op string) string {
	return fmt.Sprintf(`{"txnId":%q,"type":"DATA","database":%q,"table":%q,"json":%q,"op":%q}`, txn, db, table, row, op)
}
func orderRow(id int64) string {
	return fmt.Sprintf(`{"order_id":%d,"customer_id":1,"total_amount":"1.00","order_status":"ok"}`, id)
}

// goodAfter is the good transaction that follows the bad one.
func goodAfter(base int64) []string {
	return []string{envBegin("good"), envData("good", "test", "orders", orderRow(base+2)), envEnd("good")}
}

// badTxn wraps rows in BEGIN/END of "bad", the first row an order base+1.
func badTxn(base int64, rows ...string) []string {
	out := []string{envBegin("bad"), envData("bad", "test", "orders", orderRow(base+1))}
	out = append(out, rows...)
	return append(out, envEnd("bad"))
}

// mapMsg is a record for the hand-written contract mapping: its metadata
// and its row (nil: a marker).
func mapMsg(meta map[string]string, row any) string {
	b, err := json.Marshal(map[string]any{"meta": meta, "row": row})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// contractSeq builds hand-written contract metadata for partition p: each
// call numbers the next seq.
type contractSeq struct {
	p   int32
	seq int
}

func (c *contractSeq) meta(txn string, kv ...string) map[string]string {
	c.seq++
	m := map[string]string{
		contract.KeyPartition: fmt.Sprintf("bad-map/%d", c.p), contract.KeyTxnID: txn,
		contract.KeySeq: fmt.Sprint(c.seq), contract.KeySeqSource: fmt.Sprintf("handwritten-%d", c.p),
		contract.KeyDatabase: "test", contract.KeyTable: "orders",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<absent>" {
			delete(m, kv[i])
			continue
		}
		m[kv[i]] = kv[i+1]
	}
	return m
}

func orderObj(id int64) map[string]any {
	return map[string]any{"order_id": id, "customer_id": 1, "total_amount": "1.00", "order_status": "ok"}
}

// goodMapped is the good transaction after a hand-written bad one.
func (c *contractSeq) goodMapped(base int64) []string {
	return []string{mapMsg(c.meta("good", contract.KeyTxnEnd, "true"), orderObj(base+2))}
}

func badInputCases() []badCase {
	long := strings.Repeat("x", 40000)
	return []badCase{
		{name: "malformed body", pipe: "env", deadLettered: 3, reason: []string{"processing error", `"body" is not valid JSON`},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, `{"txnId":"bad","type":"DATA",`), goodAfter(b)...)
			},
			present: []int64{2}, absent: []int64{1}, metric: "txn_assembler_errors"},
		{name: "non-object row", pipe: "env", deadLettered: 3, reason: []string{"must hold a JSON object"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "orders", `[1,2,3]`)), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "row is a JSON scalar", pipe: "env", deadLettered: 3, reason: []string{"must be a JSON object"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, `{"txnId":"bad","type":"DATA","database":"test","table":"orders","json":42}`), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "unknown table", pipe: "env", deadLettered: 3, reason: []string{"no_such_table"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "no_such_table", `{"x":1}`)), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "unknown database", pipe: "env", deadLettered: 2, reason: []string{"no_such_db"},
			records: func(b int64, _ int32) []string {
				return append([]string{envBegin("bad"), envData("bad", "no_such_db", "orders", orderRow(b+1)), envEnd("bad")}, goodAfter(b)...)
			}, present: []int64{2}},
		{name: "two databases in one transaction", pipe: "env", deadLettered: 3, reason: []string{"two databases", "test", "other_db"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "other_db", "orders", orderRow(b+3))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1, 3}},
		{name: "data event without table", pipe: "env", deadLettered: 3, reason: []string{`field "table" is missing`},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, `{"txnId":"bad","type":"DATA","database":"test","json":"{}"}`), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "unknown event type", pipe: "env", deadLettered: 3, reason: []string{`unknown event type "UPSERTED"`},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, `{"txnId":"bad","type":"UPSERTED"}`), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "END without BEGIN", pipe: "env",
			// Nothing is open: the END is dropped; the rows after it load.
			records: func(b int64, _ int32) []string { return append([]string{envEnd("ghost")}, goodAfter(b)...) },
			present: []int64{2}},
		{name: "BEGIN of another transaction while one is open", pipe: "env",
			// The source restarted: the open transaction is aborted, never
			// visible; the new one loads.
			records: func(b int64, _ int32) []string {
				return append([]string{envBegin("bad"), envData("bad", "test", "orders", orderRow(b+1))}, goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}, metric: "txn_assembler_transactions_aborted"},
		{name: "interleaved writers in one partition", pipe: "env", deadLettered: 3, reason: []string{"interleave"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("other", "test", "orders", orderRow(b+3))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1, 3}, metric: "txn_assembler_contract_violations"},
		{name: "__op delete on a DUPLICATE KEY table", pipe: "env", deadLettered: 3, reason: []string{"order_events", "PRIMARY KEY"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envOp("bad", "test", "order_events", fmt.Sprintf(`{"event_id":%d,"order_id":%d,"kind":"x"}`, b, b+1), "delete")), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "conversion failure", pipe: "env", deadLettered: 3, reason: []string{"orders", "customer_id", "not-a-number"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "orders", fmt.Sprintf(`{"order_id":%d,"customer_id":"not-a-number"}`, b+3))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1, 3}},
		{name: "NOT NULL violation", pipe: "env", deadLettered: 3, reason: []string{"order_events", "kind"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "order_events", fmt.Sprintf(`{"event_id":%d,"order_id":%d}`, b, b+1))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "delete without the key", pipe: "env", deadLettered: 3, reason: []string{"orders", "order_id"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envOp("bad", "test", "orders", `{"customer_id":1}`, "delete")), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "value longer than its column", pipe: "env",
			// StarRocks's default (strict_mode off) loads NULL into a
			// nullable column whose value does not convert.
			records: func(b int64, _ int32) []string {
				return append([]string{envBegin("bad"), envData("bad", "test", "orders", fmt.Sprintf(`{"order_id":%d,"customer_id":1,"order_status":%q}`, b+1, long)), envEnd("bad")}, goodAfter(b)...)
			}, present: []int64{1, 2},
			check: func(t *testing.T, b int64, w *badWorld) {
				var status *string
				require.NoError(t, w.r.db.QueryRow("SELECT order_status FROM test.orders WHERE order_id = ?", b+1).Scan(&status))
				assert.Nil(t, status, "the value that does not fit is NULL")
			}},
		{name: "value longer than its column, strict_mode", pipe: "strict", deadLettered: 3, reason: []string{"orders", "order_status"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "orders", fmt.Sprintf(`{"order_id":%d,"customer_id":1,"order_status":%q}`, b+3, long))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1, 3}},
		{name: "invalid UTF-8", pipe: "env",
			// Passed through as the bytes it is: the emulator stores the
			// replacement character (StarRocks's JSON parser refuses the
			// document, and the load then fails for its transaction).
			records: func(b int64, _ int32) []string {
				row := fmt.Sprintf(`{"order_id":%d,"customer_id":1,"order_status":"caf`, b+1) + "\xff\xfe" + `"}`
				return append([]string{envBegin("bad"), `{"txnId":"bad","type":"DATA","database":"test","table":"orders","json":` + row + `}`, envEnd("bad")}, goodAfter(b)...)
			}, present: []int64{1, 2},
			check: func(t *testing.T, b int64, w *badWorld) {
				rows, err := w.r.em.Store().Rows("test", "orders")
				require.NoError(t, err)
				var status any
				for _, row := range rows {
					if toInt(row["order_id"]) == b+1 {
						status = row["order_status"]
					}
				}
				assert.Equal(t, "caf\xff\xfe", status, "the bytes as they came")
			}},
		{name: "hostile table name", pipe: "env", deadLettered: 3, reason: []string{"table", "orders`; DROP TABLE orders; --"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "orders`; DROP TABLE orders; --", orderRow(b+3))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1, 3}},
		{name: "hostile database name", pipe: "env", deadLettered: 2, reason: []string{"database", "../etc"},
			records: func(b int64, _ int32) []string {
				return append([]string{envBegin("bad"), envData("bad", "../etc", "orders", orderRow(b+1)), envEnd("bad")}, goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "processing error upstream", pipe: "env", deadLettered: 3, reason: []string{"processing error", "refusing a BOOM row"},
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "orders", fmt.Sprintf(`{"order_id":%d,"customer_id":1,"order_status":"BOOM"}`, b+3))), goodAfter(b)...)
			}, present: []int64{2}, absent: []int64{1, 3}},
		{name: "a filter after the assembler drops a row", pipe: "env",
			// A sequence gap: reported after sequence_gap_timeout and
			// skipped; the rest of the transaction commits.
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "orders", fmt.Sprintf(`{"order_id":%d,"customer_id":1,"order_status":"DROPME"}`, b+3))), goodAfter(b)...)
			}, present: []int64{1, 2}, absent: []int64{3}, metric: "starrocks_txn_sequence_gaps", log: "never arrived within sequence_gap_timeout"},

		// Hand-written contracts.
		{name: "no metadata contract", pipe: "map",
			// Each message its own transaction, admitted in arrival order.
			records: func(b int64, p int32) []string {
				return []string{mapMsg(map[string]string{contract.KeyDatabase: "test", contract.KeyTable: "orders"}, orderObj(b+2))}
			}, present: []int64{2}, log: "without the metadata contract"},
		{name: "malformed starrocks_txn_end", pipe: "map", deadLettered: 3, reason: []string{contract.KeyTxnEnd},
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return append([]string{
					mapMsg(c.meta("bad"), orderObj(b+1)),
					mapMsg(c.meta("bad", contract.KeyTxnEnd, "yes"), orderObj(b+3)),
					mapMsg(c.meta("bad", contract.KeyTxnEnd, "true"), orderObj(b+4)),
				}, c.goodMapped(b)...)
			}, present: []int64{2}, absent: []int64{1, 3, 4}},
		{name: "malformed starrocks_source_offset", pipe: "map", deadLettered: 3, reason: []string{contract.KeySourceOffset},
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return append([]string{
					mapMsg(c.meta("bad"), orderObj(b+1)),
					mapMsg(c.meta("bad", contract.KeySourceOffset, "twelve"), orderObj(b+3)),
					mapMsg(c.meta("bad", contract.KeyTxnEnd, "true"), orderObj(b+4)),
				}, c.goodMapped(b)...)
			}, present: []int64{2}, absent: []int64{1, 3, 4}},
		{name: "malformed starrocks_partition_epoch", pipe: "map", deadLettered: 3, reason: []string{contract.KeyPartitionEpoch, "got -3"},
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return append([]string{
					mapMsg(c.meta("bad"), orderObj(b+1)),
					mapMsg(c.meta("bad", contract.KeyPartitionEpoch, "-3"), orderObj(b+3)),
					mapMsg(c.meta("bad", contract.KeyTxnEnd, "true"), orderObj(b+4)),
				}, c.goodMapped(b)...)
			}, present: []int64{2}, absent: []int64{1, 3, 4}},
		{name: "offset regression inside a transaction", pipe: "map", deadLettered: 3, reason: []string{"high-water mark"},
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return append([]string{
					mapMsg(c.meta("bad"), orderObj(b+1)),
					mapMsg(c.meta("bad", contract.KeySourceOffset, "0"), orderObj(b+3)),
					mapMsg(c.meta("bad", contract.KeyTxnEnd, "true"), orderObj(b+4)),
				}, c.goodMapped(b)...)
			}, present: []int64{2}, absent: []int64{1, 3, 4}},
		{name: "offset regression of a whole transaction", pipe: "map", deadLettered: 1, reason: []string{"high-water mark"},
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return []string{
					mapMsg(c.meta("first", contract.KeyTxnEnd, "true"), orderObj(b+2)),
					mapMsg(c.meta("bad", contract.KeyTxnEnd, "true", contract.KeySourceOffset, "0"), orderObj(b+1)),
				}
			}, present: []int64{2}, absent: []int64{1}},
		{name: "duplicate starrocks_seq", pipe: "map",
			// A copy whose seq was admitted already is admitted out of
			// order with a warning; its offset decides (here it is new, so
			// it loads, with its whole transaction).
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				first := c.meta("bad")
				dup := c.meta("bad", contract.KeyTxnEnd, "true")
				dup[contract.KeySeq] = first[contract.KeySeq]
				c.seq--
				return append([]string{mapMsg(first, orderObj(b+1)), mapMsg(dup, orderObj(b+3))}, c.goodMapped(b)...)
			}, present: []int64{1, 2, 3}, log: "arrived after admission moved past it", hold: 1 + len((&contractSeq{}).goodMapped(0)), holdBytes: 1},
		{name: "data row without database", pipe: "map", deadLettered: 1, reason: []string{"database"},
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return append([]string{mapMsg(c.meta("bad", contract.KeyTxnEnd, "true", contract.KeyDatabase, "<absent>"), orderObj(b+1))}, c.goodMapped(b)...)
			}, present: []int64{2}, absent: []int64{1}},
		{name: "a mapping that changes the partition key", pipe: "map",
			// Rows load, but offsets of a key no input assigned never
			// reach Kafka: reported once with a metric.
			records: func(b int64, p int32) []string {
				c := &contractSeq{p: p}
				return []string{mapMsg(c.meta("good", contract.KeyTxnEnd, "true", contract.KeyPartition, fmt.Sprintf("renamed-%d", p)), orderObj(b+2))}
			}, present: []int64{2}, metric: "kafka_txn_unmatched_partition_keys", log: "renamed-"},

		// Without dead_letter.
		{name: "unknown table without dead_letter", pipe: "stall",
			records: func(b int64, _ int32) []string {
				return append(badTxn(b, envData("bad", "test", "no_such_table", `{"x":1}`)), goodAfter(b)...)
			}, absent: []int64{1, 2}, metric: "starrocks_txn_stalled_partition", log: "stalled at source transaction"},

		// A row of 600 KB (keys the table does not have: StarRocks ignores
		// them), over twice buffer_size on its own.
		{name: "huge row", pipe: "small",
			records: func(b int64, _ int32) []string {
				row := fmt.Sprintf(`{"order_id":%d,"customer_id":1,"order_status":"big","blob":%q}`, b+1, strings.Repeat("y", 600<<10))
				return append([]string{envBegin("bad"), envData("bad", "test", "orders", row), envEnd("bad")}, goodAfter(b)...)
			}, present: []int64{1, 2}, log: "over twice buffer_size", hold: 1 + len(goodAfter(0)), holdBytes: 2 * badBufferSize},
		// A source transaction over twice buffer_size.
		// Its own pipeline: the error is logged once per reportEvery.
		{name: "transaction larger than 2 x buffer_size", pipe: "small-txn",
			records: func(b int64, _ int32) []string {
				rows := []string{}
				for i := 1; i <= 120; i++ {
					rows = append(rows, envData("bad", "test", "order_items", fmt.Sprintf(`{"order_id":%d,"item_id":%d,"product":"a-product-name","quantity":1,"price":"1.00"}`, b+1, i)))
				}
				return append(badTxn(b, rows...), goodAfter(b)...)
			},
			present: []int64{1, 2}, log: "over twice buffer_size", hold: 1 + len(goodAfter(0)), holdBytes: 2 * badBufferSize,
			check: func(t *testing.T, b int64, w *badWorld) {
				var n int
				require.NoError(t, w.r.db.QueryRow("SELECT COUNT(*) FROM test.order_items WHERE order_id = ?", b+1).Scan(&n))
				assert.Equal(t, 120, n, "the large transaction committed whole")
			}},
	}
}

// deadLetters collects what reaches dead_letter.
type deadLetters struct {
	mu      sync.Mutex
	byTxn   map[string][]*service.Message // partition|txn → messages
	reasons map[string]string
}

func (d *deadLetters) register(env *service.Environment) error {
	return env.RegisterBatchOutput("badinput_dead_letters", service.NewConfigSpec().Summary("Collects dead letters."),
		func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			return d, service.BatchPolicy{}, 1, nil
		})
}

func (d *deadLetters) Connect(context.Context) error { return nil }
func (d *deadLetters) Close(context.Context) error   { return nil }
func (d *deadLetters) WriteBatch(_ context.Context, b service.MessageBatch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range b {
		p, _ := m.MetaGet(contract.KeyPartition)
		id, _ := m.MetaGet(contract.KeyTxnID)
		k := p + "|" + id
		d.byTxn[k] = append(d.byTxn[k], m)
		d.reasons[k], _ = m.MetaGet("starrocks_dead_letter_reason")
	}
	return nil
}

func (d *deadLetters) of(part, txn string) (int, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := part + "|" + txn
	return len(d.byTxn[k]), d.reasons[k]
}

// badWorld is the rig, the pipelines and their dead letters.
type badWorld struct {
	r     *rig
	pipes map[string]*pipeline
	dl    map[string]*deadLetters
}

// badBufferSize is the buffer_size of the "small" and "small-txn" pipelines.
const badBufferSize = 4096

// badTopic is the topic of a pipeline.
func badTopic(pipe string) string { return "bad-" + pipe }

func (w *badWorld) yaml(pipe string) string {
	processors := `    - txn_assembler: { format: envelope }
    - switch:
        - check: content().string().contains("BOOM")
          processors:
            - mapping: 'root = throw("refusing a BOOM row")'
    - mapping: 'root = if content().string().contains("DROPME") { deleted() } else { content() }'
`
	if pipe == "map" {
		processors = `    - mapping: |
        meta = @.assign(this.meta)
        meta starrocks_source_offset = this.meta.starrocks_source_offset | @kafka_offset.string()
        root = if this.row != null { this.row.format_json() } else { "" }
`
	}
	extra := ""
	switch pipe {
	case "env", "map":
		extra = "    dead_letter: { badinput_dead_letters: {} }\n    mysql_address: " + w.r.em.MySQLAddr() + "\n"
	case "strict":
		extra = "    dead_letter: { badinput_dead_letters: {} }\n    load_properties: { strict_mode: \"true\" }\n"
	case "small", "small-txn":
		extra = fmt.Sprintf("    buffer_size: %d\n", badBufferSize)
	}
	batching := "{ count: 3, period: 20ms }"
	switch pipe {
	case "small", "small-txn":
		// Batches cut by the policy alone (a policy with processors is
		// Benthos's batcher), as a user's batching can: the output then
		// holds a transaction open across batches, which is what reaches
		// the hard cap. The input's own batches carry whole transactions.
		batching = "{ count: 3, period: 20ms, processors: [ { mapping: 'root = this' } ] }"
	}
	return fmt.Sprintf(`
input:
  kafka_txn:
    seed_brokers: [ %q ]
    topics: [ %s ]
    consumer_group: g-%s
    checkpoint_limit: 10000
    commit_period: 100ms
    fetch_max_wait: 50ms
    batching: %s
  processors:
%soutput:
  starrocks_txn:
    schema_evolution: ignore
    load_urls: [ %q ]
    commit_interval: 200ms
    txn_timeout: 10s
    max_in_flight: 256
    request_timeout: 3s
    sequence_gap_timeout: 1s
    retry_backoff: { initial_interval: 20ms, max_interval: 300ms }
%sshutdown_timeout: 3s
`, strings.Join(w.r.brokers, ","), badTopic(pipe), pipe, batching, processors, w.r.em.FEURL(), extra)
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := badInputCases()
	r := newRig(t, 1)
	w := &badWorld{r: r, pipes: map[string]*pipeline{}, dl: map[string]*deadLetters{}}
	parts := map[string]int32{}
	partOf := make([]int32, len(cases))
	for i, c := range cases {
		partOf[i] = parts[c.pipe]
		parts[c.pipe]++
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for pipe, n := range parts {
		_, err := kadm.NewClient(cl).CreateTopic(ctx, n, 1, nil, badTopic(pipe))
		require.NoError(t, err)
	}
	for pipe := range parts {
		dl := &deadLetters{byTxn: map[string][]*service.Message{}, reasons: map[string]string{}}
		p, err := launch(pipe, w.yaml(pipe), dl.register)
		require.NoError(t, err)
		p.cleanupOnEnd(t)
		w.pipes[pipe], w.dl[pipe] = p, dl
	}
	// logFrom is where a held-back case's log line must appear from.
	logFrom := map[int]int{}
	for i, c := range cases {
		var recs []*kgo.Record
		for _, v := range c.records(badBase(i), partOf[i]) {
			recs = append(recs, &kgo.Record{Topic: badTopic(c.pipe), Partition: partOf[i], Value: []byte(v)})
		}
		if c.hold == 0 {
			require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), c.name)
			continue
		}
		m := w.pipes[c.pipe].metrics
		testkit.WaitFor(t, 30*time.Second, func() bool { return m.Gauge("starrocks_txn_buffered_bytes") == 0 }, "%s: the pipeline's buffer empties", c.name)
		head, tail := recs[:len(recs)-c.hold], recs[len(recs)-c.hold:]
		logFrom[i] = w.pipes[c.pipe].logs.len()
		require.NoError(t, cl.ProduceSync(ctx, head...).FirstErr(), c.name)
		testkit.WaitFor(t, 30*time.Second, func() bool { return m.Gauge("starrocks_txn_buffered_bytes") >= c.holdBytes },
			"%s: the pipeline buffers %d bytes", c.name, c.holdBytes)
		require.NoError(t, cl.ProduceSync(ctx, tail...).FirstErr(), c.name)
	}
	logOf := func(i int, c badCase) string { return w.pipes[c.pipe].logs.from(logFrom[i]) }

	// Every case's outcome is reached (or, for what must stay absent,
	// not) within the deadline; then each is checked.
	satisfied := func(i int, c badCase) bool {
		if c.deadLettered > 0 {
			if n, _ := w.dl[c.pipe].of(fmt.Sprintf("%s/%d", badTopic(c.pipe), partOf[i]), "bad"); n < c.deadLettered {
				return false
			}
		}
		for _, id := range c.present {
			if !w.orderPresent(badBase(i) + id) {
				return false
			}
		}
		return (c.metric == "" || w.metric(c.pipe, c.metric) > 0) && (c.log == "" || strings.Contains(logOf(i, c), c.log))
	}
	testkit.Poll(30*time.Second, func() bool {
		for i, c := range cases {
			if c.known == "" && !satisfied(i, c) {
				return false
			}
		}
		return true
	})
	// What must not happen has had the time to (an absence: real time).
	// No event marks that the outputs have passed the point where they
	// would have done it — a second dead letter, a late commit of an
	// absent order — and the stalled pipe's partition never moves on.
	time.Sleep(time.Second)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.known != "" && os.Getenv("STARROCKS_TXN_KNOWN_BUGS") != "1" {
				t.Skipf("known defect of the output: %s (STARROCKS_TXN_KNOWN_BUGS=1 runs it)", c.known)
			}
			base, part := badBase(i), fmt.Sprintf("%s/%d", badTopic(c.pipe), partOf[i])
			n, reason := w.dl[c.pipe].of(part, "bad")
			assert.Equal(t, c.deadLettered, n, "messages of the bad transaction in dead_letter (whole, or none)")
			for _, s := range c.reason {
				assert.Contains(t, reason, s, "the dead-letter reason")
			}
			for _, id := range c.present {
				assert.True(t, w.orderPresent(base+id), "order %d committed", base+id)
			}
			for _, id := range c.absent {
				assert.False(t, w.orderPresent(base+id), "order %d is not visible", base+id)
			}
			if c.metric != "" {
				assert.Positive(t, w.metric(c.pipe, c.metric), "metric %s", c.metric)
			}
			if c.log != "" {
				assert.Contains(t, logOf(i, c), c.log, "the pipeline's log")
			}
			if c.check != nil {
				c.check(t, base, w)
			}
			if reason != "" {
				t.Logf("dead-letter reason: %s", reason)
			}
		})
	}
}

// badBase is case i's order id range.
func badBase(i int) int64 { return int64(i+1) * 1000 }

func (w *badWorld) orderPresent(id int64) bool {
	var n int
	if err := w.r.db.QueryRow("SELECT COUNT(*) FROM test.orders WHERE order_id = ?", id).Scan(&n); err != nil {
		return false
	}
	return n > 0
}

func (w *badWorld) metric(pipe, name string) int64 {
	m := w.pipes[pipe].metrics
	return max(m.Counter(name), m.Peak(name))
}

// A source transaction still open (BEGIN and rows, no END) when the pipeline
// stops gracefully: nothing of it is visible and nothing of it is
// acknowledged, so the group offset stays before it; once its END arrives a
// new pipeline reads it again from there and commits it whole.
func TestBadInputOpenTransactionAtShutdown(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	w := &badWorld{r: r, pipes: map[string]*pipeline{}, dl: map[string]*deadLetters{}}
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, badTopic("open"))
	require.NoError(t, err)
	produce := func(vals ...string) {
		var recs []*kgo.Record
		for _, v := range vals {
			recs = append(recs, &kgo.Record{Topic: badTopic("open"), Value: []byte(v)})
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr())
	}
	produce(append(goodAfter(0), envBegin("open"), envData("open", "test", "orders", orderRow(1)),
		envData("open", "test", "order_items", `{"order_id":1,"item_id":1,"quantity":1,"price":"1.00"}`))...)
	dl := &deadLetters{byTxn: map[string][]*service.Message{}, reasons: map[string]string{}}
	p, err := launch("open-1", w.yaml("open"), dl.register)
	require.NoError(t, err)
	p.cleanupOnEnd(t)
	w.pipes["open"] = p
	require.Eventually(t, func() bool { return w.orderPresent(2) }, 20*time.Second, 20*time.Millisecond, "the transaction before the open one commits")
	// The input has the open transaction's rows: franz-go sends a fetch only
	// once the input took the previous one.
	fetches := r.kafka.Fetches()
	testkit.WaitFor(t, 20*time.Second, func() bool { return r.kafka.Fetches() >= fetches+2 }, "the input polls the open transaction's rows")
	start := time.Now()
	require.NoError(t, p.stream.StopWithin(15*time.Second), "a graceful stop with an open source transaction ends")
	p.stopped = true
	p.cancel()
	t.Logf("the graceful stop took %v of its 15s", time.Since(start).Round(time.Millisecond))
	assert.False(t, w.orderPresent(1), "nothing of the open transaction is visible")
	offsets, err := kadm.NewClient(cl).FetchOffsets(ctx, "g-open")
	require.NoError(t, err)
	o, ok := offsets.Lookup(badTopic("open"), 0)
	require.True(t, ok, "the group committed the transaction before")
	assert.Equal(t, int64(3), o.At, "the group offset stays at the open transaction's BEGIN")

	produce(envEnd("open"))
	p2, err := launch("open-2", w.yaml("open"), dl.register)
	require.NoError(t, err)
	p2.cleanupOnEnd(t)
	require.Eventually(t, func() bool { return w.orderPresent(1) }, 20*time.Second, 20*time.Millisecond, "read again and committed")
	var items int
	require.NoError(t, r.db.QueryRow("SELECT COUNT(*) FROM test.order_items WHERE order_id = 1").Scan(&items))
	assert.Equal(t, 1, items, "whole")
	p2.stop(t, 10*time.Second)
}
