package debezium_txn

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genRecord is one generated record of a data partition.
type genRecord struct {
	value []byte
	txn   string // owner transaction ("" for a side row or a free record)
	side  bool
	gate  bool
	dup   bool // a re-send: holds nothing of its own
}

type genWorld struct {
	parts   []tp
	recs    map[tp][]genRecord
	metas   [][]byte
	ends    map[string]int64 // END offset per transaction
	events  map[string]int   // consumed events per transaction
	order   []string         // transactions in END order
	nSides  int
	hasSnap bool
}

var propParts = []tp{orders0, orders1, items0}

// genStream draws a Debezium stream: an optional snapshot, transactions over
// three consumed partitions and an unconsumed collection, re-sent events,
// re-sent ENDs, untransacted rows and tombstones after deletes.
func genStream(t *rapid.T) *genWorld {
	w := &genWorld{parts: propParts, recs: map[tp][]genRecord{}, ends: map[string]int64{}, events: map[string]int{}}
	id := 0
	if rapid.Bool().Draw(t, "snapshot") {
		w.hasSnap = true
		n := rapid.IntRange(1, 6).Draw(t, "snapRows")
		for i := 0; i < n; i++ {
			p := propParts[rapid.IntRange(0, len(propParts)-1).Draw(t, "snapPart")]
			marker := "true"
			if i == n-1 && rapid.Bool().Draw(t, "lastMarker") {
				marker = "last"
			}
			id++
			w.recs[p] = append(w.recs[p], genRecord{value: snapRow(tableOf(p), id, marker), side: true, gate: true})
			w.nSides++
		}
	}
	nTxns := rapid.IntRange(1, 8).Draw(t, "txns")
	for k := 0; k < nTxns; k++ {
		txn := fmt.Sprintf("g:%d", k+1)
		nEv := rapid.IntRange(0, 5).Draw(t, "events")
		counts := map[string]int{}
		total := 0
		var rendered []struct {
			p tp
			v []byte
		}
		for i := 0; i < nEv; i++ {
			p := propParts[rapid.IntRange(0, len(propParts)-1).Draw(t, "part")]
			table := tableOf(p)
			counts[table]++
			total++
			op := rapid.SampledFrom([]byte{opCreate, opUpdate, opDelete}).Draw(t, "op")
			id++
			v := dbzEvent(op, table, id, txn, total, counts[table])
			w.recs[p] = append(w.recs[p], genRecord{value: v, txn: txn})
			rendered = append(rendered, struct {
				p tp
				v []byte
			}{p, v})
			if op == opDelete {
				w.recs[p] = append(w.recs[p], genRecord{value: nil})
			}
		}
		audit := rapid.IntRange(0, 2).Draw(t, "audit")
		endArgs := []any{}
		for _, table := range []string{"orders", "items"} {
			if counts[table] > 0 {
				endArgs = append(endArgs, "test."+table, counts[table])
			}
		}
		if audit > 0 {
			endArgs = append(endArgs, "test.audit", audit)
		}
		w.metas = append(w.metas, dbzBegin(txn))
		w.ends[txn] = int64(len(w.metas))
		w.metas = append(w.metas, dbzEnd(txn, endArgs...))
		w.events[txn] = nEv
		w.order = append(w.order, txn)
		// A re-send of some of its events, and of its END.
		for _, r := range rendered {
			if rapid.IntRange(0, 4).Draw(t, "resend") == 0 {
				w.recs[r.p] = append(w.recs[r.p], genRecord{value: r.v, txn: txn, dup: true})
			}
		}
		if rapid.IntRange(0, 4).Draw(t, "resendEnd") == 0 {
			w.metas = append(w.metas, dbzEnd(txn, endArgs...))
		}
		if rapid.IntRange(0, 5).Draw(t, "untransacted") == 0 {
			p := propParts[rapid.IntRange(0, len(propParts)-1).Draw(t, "uPart")]
			id++
			w.recs[p] = append(w.recs[p], genRecord{value: dbzEvent(opUpdate, tableOf(p), id, "", 0, 0), side: true})
			w.nSides++
		}
	}
	return w
}

func tableOf(p tp) string {
	if p.topic == "shop.test.items" {
		return "items"
	}
	return "orders"
}

// Property: whatever the arrival interleaving, the commit timing and the
// re-sends, every transaction with consumed events is emitted exactly once,
// whole, in END order; every side row once, in partition order; a side row
// and the transactions around it in its partition keep their order across
// commits; no transaction is emitted over uncommitted snapshot rows; and no
// floor ever passes an offset whose owner StarRocks has not committed.
func TestAssemblerProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := genStream(rt)
		cfg := testConfig()
		cfg.untransacted = untransactedSingleRow
		a := newAssembler(cfg)
		g := newGenFeed(w, a)
		now, fed := g.now, g.fed
		tracking := rapid.Bool().Draw(rt, "tracking")
		// recycle gives each emission's events back once it is checked, as the
		// input does once it made the messages (emit.go recycleMsgs): later
		// transactions then reuse them.
		recycle := rapid.Bool().Draw(rt, "recycle")
		type lastMsg struct {
			partition string
			offset    int64
		}
		lasts := map[*emission]lastMsg{}

		committedTxn := map[string]bool{}
		committedSide := map[string]bool{} // "<tp>@<offset>"
		emittedTxn := map[string]int{}
		emittedSide := map[string]int{}
		var emittedOrder []string
		var unacked []*emission

		commit := func(em *emission) {
			if tracking {
				m := lasts[em]
				a.committed(m.partition, m.offset)
			} else {
				a.acked(em)
			}
			if em.txn != nil {
				committedTxn[em.txn.id] = true
				// Publishing a committed-through offset commits every
				// earlier transaction of the stream too.
				if tracking {
					for _, id := range w.order {
						if w.ends[id] <= em.txn.endOffset && emittedTxn[id] > 0 {
							committedTxn[id] = true
						}
					}
				}
			}
			for _, s := range em.sides {
				committedSide[fmt.Sprintf("%s@%d", s.rec.tp, s.rec.offset)] = true
			}
		}
		checkEmission := func(em *emission) {
			if em.txn != nil {
				id := em.txn.id
				emittedTxn[id]++
				emittedOrder = append(emittedOrder, id)
				if got := len(em.msgs); got != w.events[id] {
					rt.Fatalf("transaction %s emitted with %d events, it has %d", id, got, w.events[id])
				}
				for i := 1; i < len(em.msgs); i++ {
					if em.msgs[i].sourceOffset <= em.msgs[i-1].sourceOffset {
						rt.Fatalf("source offsets not increasing in %s", id)
					}
				}
				// Each row is an event of the transaction, read where it was
				// (a reused event holds nothing of its last transaction).
				for _, m := range em.msgs {
					if m.ev.txID != id || m.rec.offset >= int64(len(w.recs[m.rec.tp])) || w.recs[m.rec.tp][m.rec.offset].txn != id {
						rt.Fatalf("transaction %s emitted a row of transaction %q (%s@%d)", id, m.ev.txID, m.rec.tp, m.rec.offset)
					}
				}
				// No snapshot row uncommitted, and no side row before one
				// of its events in the same partition uncommitted.
				for _, p := range w.parts {
					for off, r := range w.recs[p] {
						if !r.side || off >= fed[p] || committedSide[fmt.Sprintf("%s@%d", p, off)] {
							continue
						}
						if r.gate {
							rt.Fatalf("transaction %s emitted while snapshot row %s@%d is not committed", id, p, off)
						}
						for _, m := range em.msgs {
							if m.rec.tp == p && m.rec.offset > int64(off) {
								rt.Fatalf("transaction %s (event %s@%d) emitted before side row %s@%d committed", id, p, m.rec.offset, p, off)
							}
						}
					}
				}
				return
			}
			for _, s := range em.sides {
				key := fmt.Sprintf("%s@%d", s.rec.tp, s.rec.offset)
				emittedSide[key]++
				for off := 0; off < int(s.rec.offset); off++ {
					r := w.recs[s.rec.tp][off]
					if r.txn != "" && !r.dup && !committedTxn[r.txn] && w.events[r.txn] > 0 {
						rt.Fatalf("side row %s emitted before transaction %s (its event at offset %d) committed", key, r.txn, off)
					}
				}
			}
		}
		checkFloors := func() {
			data, txnFloor := a.floors()
			for _, p := range w.parts {
				f, ok := data[p]
				if !ok {
					continue
				}
				for off := 0; off < fed[p] && int64(off) < f; off++ {
					r := w.recs[p][off]
					switch {
					case r.dup || (r.txn == "" && !r.side):
					case r.side && !committedSide[fmt.Sprintf("%s@%d", p, off)]:
						rt.Fatalf("floor of %s is %d, past the uncommitted side row at %d", p, f, off)
					case r.txn != "" && !committedTxn[r.txn] && w.events[r.txn] > 0:
						rt.Fatalf("floor of %s is %d, past offset %d of uncommitted transaction %s", p, f, off, r.txn)
					}
				}
			}
			for _, id := range w.order {
				if w.events[id] > 0 && !committedTxn[id] && w.ends[id] < int64(g.metaFed) && txnFloor > w.ends[id] {
					rt.Fatalf("transaction topic floor %d is past the END %d of uncommitted %s", txnFloor, w.ends[id], id)
				}
			}
		}

		steps := 0
		for {
			steps++
			choices := g.steps(len(unacked), nil)
			if len(choices) == 0 {
				break
			}
			switch c := rapid.SampledFrom(choices).Draw(rt, "step"); c {
			case "commit":
				i := rapid.IntRange(0, len(unacked)-1).Draw(rt, "which")
				if tracking {
					i = 0 // published committed-through offsets are in order
				}
				em := unacked[i]
				unacked = append(unacked[:i], unacked[i+1:]...)
				commit(em)
			default:
				g.apply(rt, c)
			}
			for {
				em := a.next(rapid.IntRange(1, 3).Draw(rt, "maxSide"))
				if em == nil {
					break
				}
				checkEmission(em)
				last := em.msgs[len(em.msgs)-1]
				lasts[em] = lastMsg{last.partition, last.sourceOffset}
				if recycle {
					a.recycleMsgs(em)
				}
				unacked = append(unacked, em)
			}
			checkFloors()
			if steps > 10000 {
				rt.Fatal("no progress")
			}
		}
		// Everything fed and committed: each transaction with consumed
		// events once, in END order; each side row once.
		var want []string
		for _, id := range w.order {
			if w.events[id] > 0 {
				want = append(want, id)
			}
		}
		if fmt.Sprint(want) != fmt.Sprint(emittedOrder) {
			ps := a.problems(now.Add(time.Hour))
			rt.Fatalf("emitted %v, want %v (problems: %v)", emittedOrder, want, ps)
		}
		if len(emittedSide) != w.nSides {
			rt.Fatalf("emitted %d side rows, want %d", len(emittedSide), w.nSides)
		}
		for k, n := range emittedSide {
			if n != 1 {
				rt.Fatalf("side row %s emitted %d times", k, n)
			}
		}
		data, txnFloor := a.floors()
		for _, p := range w.parts {
			if f, ok := data[p]; ok && f != int64(len(w.recs[p])) {
				rt.Fatalf("final floor of %s is %d, want %d", p, f, len(w.recs[p]))
			}
		}
		if txnFloor != int64(len(w.metas)) {
			rt.Fatalf("final transaction topic floor %d, want %d", txnFloor, len(w.metas))
		}
		if a.buffered != 0 {
			rt.Fatalf("%d bytes still buffered", a.buffered)
		}
	})
}

// genFeed feeds a generated stream to an assembler one step at a time, as
// the properties draw them.
type genFeed struct {
	w   *genWorld
	a   *assembler
	now time.Time
	// fed is how many records of each partition were fed, metaFed of
	// the transaction topic.
	fed     map[tp]int
	metaFed int
	// list is the listing of end offsets the assembler asked for and did
	// not get yet.
	list *struct {
		after int64
		last  bool
	}
}

// newGenFeed assigns the stream's partitions to a (those without records
// started, as empty) and starts the transaction topic at offset 0.
func newGenFeed(w *genWorld, a *assembler) *genFeed {
	for _, p := range w.parts {
		a.assign(p)
		if len(w.recs[p]) == 0 {
			a.markEmpty(p)
		}
	}
	a.txnStart(0)
	return &genFeed{w: w, a: a, now: time.Unix(0, 0), fed: map[tp]int{}}
}

// steps returns the steps possible now, sorted: a partition's next record
// (its name), the transaction topic's next record ("meta"), an
// acknowledgement while emissions are unacknowledged ("commit", the
// caller's), the end offsets the assembler asked for ("ends"). With read,
// only what it holds is fed (the buffer bound's mustRead).
func (g *genFeed) steps(unacked int, read *readSet) []string {
	var choices []string
	for _, p := range g.w.parts {
		if g.fed[p] < len(g.w.recs[p]) && (read == nil || read.parts[p]) {
			choices = append(choices, p.String())
		}
	}
	if g.metaFed < len(g.w.metas) && (read == nil || read.txnTopic) {
		choices = append(choices, "meta")
	}
	if unacked > 0 {
		choices = append(choices, "commit")
	}
	if after, last, ok := g.a.wantEnds(); ok {
		g.list = &struct {
			after int64
			last  bool
		}{after, last}
	}
	if g.list != nil {
		choices = append(choices, "ends")
	}
	sort.Strings(choices)
	return choices
}

// apply takes a step of steps other than "commit".
func (g *genFeed) apply(rt *rapid.T, step string) {
	switch step {
	case "meta":
		if err := g.a.addTxnMeta(int64(g.metaFed), g.w.metas[g.metaFed], g.now); err != nil {
			rt.Fatal(err)
		}
		g.metaFed++
	case "ends":
		ends := map[tp]int64{}
		for _, p := range g.w.parts {
			ends[p] = int64(len(g.w.recs[p]))
		}
		g.a.endsListed(g.list.after, g.list.last, ends)
		g.list = nil
	default:
		for _, p := range g.w.parts {
			if p.String() == step {
				off := g.fed[p]
				if err := g.a.addData(recMeta{tp: p, offset: int64(off)}, g.w.recs[p][off].value, g.now); err != nil {
					rt.Fatal(err)
				}
				g.fed[p]++
			}
		}
	}
}
