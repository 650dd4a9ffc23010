package debezium_txn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// poisonPools hands the client fresh fetch buffers and, when one comes
// back (Record.Recycle of its last record), overwrites it with 0xAA and
// never hands it out again: anything that still reads a byte of a
// released batch, or a field of a released record, reads poison.
type poisonPools struct {
	mu       sync.Mutex
	bytePuts int
	recPuts  int
	poisoned int64
}

var poison = []byte{0xAA, 0xAA, 0xAA, 0xAA}

func (p *poisonPools) GetDecompressBytes(compressed []byte, codec kgo.CompressionCodecType) []byte {
	return make([]byte, 0, decompressedSize(compressed, codec))
}

func (p *poisonPools) PutDecompressBytes(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] = 0xAA
	}
	p.mu.Lock()
	p.bytePuts++
	p.poisoned += int64(len(b))
	p.mu.Unlock()
}

func (p *poisonPools) GetRecords(n int) []kgo.Record { return make([]kgo.Record, 0, n) }

func (p *poisonPools) PutRecords(r []kgo.Record) {
	r = r[:cap(r)]
	for i := range r {
		r[i] = kgo.Record{Topic: "poisoned", Key: poison, Value: poison, Offset: -1, Partition: -1}
	}
	p.mu.Lock()
	p.recPuts++
	p.mu.Unlock()
}

func (p *poisonPools) counts() (bytePuts, recPuts int, poisoned int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bytePuts, p.recPuts, p.poisoned
}

// watchOpen samples in's assembler until stop is closed and reports
// whether it ever held, between polls, the events of a transaction not yet
// complete read from more than one topic: events buffered across polls
// and topics while the batches they came from were released.
func watchOpen(in *Input, stop <-chan struct{}) func() bool {
	var mu sync.Mutex
	saw := false
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			in.mu.Lock()
			found := false
			if a := in.asm; a != nil {
				for _, t := range a.txns {
					if t.complete() || len(t.events) == 0 {
						continue
					}
					for _, e := range t.events[1:] {
						if e.topic != t.events[0].topic {
							found = true
							break
						}
					}
				}
			}
			in.mu.Unlock()
			if found {
				mu.Lock()
				saw = true
				mu.Unlock()
			}
		}
	}()
	return func() bool {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return saw
	}
}

// Every fetched batch and record the input gives back is poisoned at once
// and never reused: the rows and metadata it emits (the sink's model,
// table names, contract fields) still equal what was produced — with and
// without the JsonConverter's schemas (the transaction topic's recognised
// by bytes; rows converted by their plan, or copied as they are),
// batches of many transactions split over polls by a tiny
// fetch_max_partition_bytes, large transactions spanning every topic and
// held open across polls, re-sent transactions, and a rebalance (the
// owner re-reads from its floors when a second member joins, the second
// takes everything over when the first leaves).
func TestPooledFetchBuffersNotReadAfterRelease(t *testing.T) {
	for _, schemas := range []bool{true, false} {
		t.Run(map[bool]string{true: "schemas", false: "schemaless"}[schemas], func(t *testing.T) {
			testPooledFetchBuffersNotReadAfterRelease(t, schemas)
		})
	}
}

func testPooledFetchBuffersNotReadAfterRelease(t *testing.T, schemas bool) {
	pools := &poisonPools{}
	old := newFetchPools
	newFetchPools = func() kgo.Pool { return pools }
	t.Cleanup(func() { newFetchPools = old })

	w := newKWorld(t, workload.DebeziumOptions{Partitions: 3, Schemas: schemas, SnapshotOrders: 6, LargeEvery: 3, LargeSize: 4, ResendRatio: 0.1, Seed: 31})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.prod.Snapshot(ctx))
	produce := func(n int) {
		t.Helper()
		// Many transactions per produce call: each partition's records
		// share compressed batches, which the tiny fetch size splits
		// over polls.
		for n > 0 {
			ts := make([]workload.DebeziumTxn, 0, 15)
			for len(ts) < 15 && n > 0 {
				ts = append(ts, w.src.Next())
				n--
			}
			require.NoError(t, w.prod.WriteBatch(ctx, ts))
		}
	}
	const extra = "fetch_max_partition_bytes: 512\n"
	produce(60)
	a, _ := w.newInput("g-poison", extra)
	stopA := make(chan struct{})
	sawA := watchOpen(a, stopA)
	s := newSink(t)
	readUntil(t, a, s, 60*time.Second, func() bool { return s.rows > 60 })

	// A second member joins: a rebalance, a re-reads from its floors.
	b, _ := w.newInput("g-poison", extra)
	stopB := make(chan struct{})
	sawB := watchOpen(b, stopB)
	testkit.WaitFor(t, 30*time.Second, func() bool { return !b.Lease().Until().IsZero() }, "b's assignment")
	produce(45)
	readUntil(t, a, s, 60*time.Second, func() bool { return s.rows > 200 })
	close(stopA)
	openA := sawA()
	require.NoError(t, a.Close(context.Background()))

	// b takes everything over.
	produce(45)
	s2 := newSink(t)
	s2.model = s.model
	readUntil(t, b, s2, 60*time.Second, w.converged(s2))
	close(stopB)
	openB := sawB()

	bytePuts, recPuts, poisoned := pools.counts()
	t.Logf("batches poisoned on release: %d (%d bytes), record slices: %d; open transactions across topics seen: a %v, b %v", bytePuts, poisoned, recPuts, openA, openB)
	assert.Positive(t, bytePuts, "decompressed batches went back to the pool (the producer compresses)")
	assert.Positive(t, recPuts, "record slices went back to the pool")
	assert.True(t, openA || openB, "a transaction's events were held across polls and topics")
}
