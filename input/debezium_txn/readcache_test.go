package debezium_txn

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// fakeTxnTopic stands in for readEnds: the END of transaction r<i> at
// offset 2i+1 (its BEGIN at 2i); fail says which attempts fail. It records
// every range asked and the bound of every attempt.
type fakeTxnTopic struct {
	mu     sync.Mutex
	prefix string
	asked  [][2]int64
	bounds []time.Duration
	fail   func(lo, hi int64) error
}

func (f *fakeTxnTopic) readEnds(_ *endReader, ctx context.Context, lo, hi int64) ([]endAt, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, [2]int64{lo, hi})
	if dl, ok := ctx.Deadline(); ok {
		f.bounds = append(f.bounds, time.Until(dl))
	}
	if f.fail != nil {
		if err := f.fail(lo, hi); err != nil {
			return nil, lo, err
		}
	}
	var out []endAt
	for off := lo; off < hi; off++ {
		if off%2 == 1 {
			out = append(out, endAt{off: off, id: fmt.Sprintf("%s%d", f.prefix, off/2)})
		}
	}
	return out, hi, nil
}

func (f *fakeTxnTopic) reset() ([][2]int64, []time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, b := f.asked, f.bounds
	f.asked, f.bounds = nil, nil
	return a, b
}

// cacheInput is an Input with resend_window 6 (read-backs of 12 offsets in
// one piece) and revoke_timeout 2s, whose read-backs read fake.
func cacheInput(t *testing.T, fake *fakeTxnTopic) (*Input, *syncBuffer) {
	t.Helper()
	defer func(n int64) { readBackMinPiece = n }(readBackMinPiece)
	old := readEndsFn
	readEndsFn = fake.readEnds
	t.Cleanup(func() { readEndsFn = old })
	logs := &syncBuffer{}
	res := service.MockResources(service.MockResourcesOptUseLogger(
		service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(logs, nil)))))
	conf, err := ConfigSpec().ParseYAML(`
seed_brokers: [ "127.0.0.1:1" ]
topics: [ shop.test.orders ]
transaction_topic: shop.transaction
consumer_group: g-cache
revoke_timeout: 2s
resend_window: 6
`, nil)
	require.NoError(t, err)
	in, err := New(conf, res)
	require.NoError(t, err)
	return in, logs
}

func ids(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("r%d", i))
	}
	return out
}

// A member that rejoins at the same start (its session lost while it read
// back, ARCHITECTURE.md §13.7) does not read again what it read: the ids
// come from what this process remembers, and a transaction re-sent from
// before the start is still recognised. A start further on reads only the
// part it lacks; a start that goes back (offsets reset, the topic
// recreated) forgets everything and reads the whole range again.
func TestReadBackRemembersWhatItReadAcrossAssignments(t *testing.T) {
	fake := &fakeTxnTopic{prefix: "r"}
	in, logs := cacheInput(t, fake)
	id := [16]byte{5} // a known topic id: an unknown one forgets the ranges

	require.True(t, in.ends.check(id, 24, 30))
	assert.Equal(t, ids(6, 12), in.readBackIDs(context.Background(), 24))
	asked, _ := fake.reset()
	assert.Equal(t, [][2]int64{{12, 24}}, asked)

	// The same member again at the same start: nothing is read.
	require.True(t, in.ends.check(id, 24, 30))
	got := in.readBackIDs(context.Background(), 24)
	asked, _ = fake.reset()
	assert.Empty(t, asked, "the range read before is not read again")
	assert.Equal(t, ids(6, 12), got)
	assert.Contains(t, logs.String(), "were read back earlier in this process")

	// What it remembers is what the assembler needs: "r7", committed
	// before the start and re-sent whole after it, is recognised.
	f := newFeeder(t, testConfig(), orders0)
	f.a.txnStart(24)
	f.txn = 24
	for _, x := range got {
		f.a.remember(x, doneTxn{whole: true})
	}
	f.meta(dbzBegin("r7"))
	f.meta(dbzEnd("r7", "test.orders", 1))
	assert.Empty(t, f.drain())
	assert.Empty(t, f.a.problems(f.now.Add(time.Hour)), "the re-sent END is known and ignored")

	// A start 4 offsets on: only [24, 28) is read.
	require.True(t, in.ends.check(id, 28, 30))
	assert.Equal(t, ids(8, 14), in.readBackIDs(context.Background(), 28))
	asked, _ = fake.reset()
	assert.Equal(t, [][2]int64{{24, 28}}, asked, "only the part not read before")

	// The topic recreated: offsets restart, the start goes back; another
	// topic's ENDs are there now. Everything is read again.
	fake.prefix = "n"
	assert.False(t, in.ends.check(id, 20, 30))
	assert.Equal(t, []string{"n4", "n5", "n6", "n7", "n8", "n9"}, in.readBackIDs(context.Background(), 20))
	asked, _ = fake.reset()
	assert.Equal(t, [][2]int64{{8, 20}}, asked)

	// The log end below what was read (truncated or recreated), or another
	// topic id: forgotten too.
	assert.False(t, in.ends.check(id, 20, 19))
	assert.Equal(t, [][2]int64{{8, 20}}, in.ends.gaps(8, 20))
	fake.prefix = "r"
	assert.True(t, in.ends.check([16]byte{1}, 20, 30))
	in.readBackIDs(context.Background(), 20)
	fake.reset()
	assert.True(t, in.ends.check([16]byte{1}, 20, 30))
	assert.Empty(t, in.ends.gaps(8, 20))
	assert.False(t, in.ends.check([16]byte{2}, 20, 30))
	assert.Equal(t, [][2]int64{{8, 20}}, in.ends.gaps(8, 20))
}

// A member whose session ends while it reads back keeps what it read: at
// the rejoin it reads only the older pieces it lacked, and their first
// attempt has the bound the last one grew to, not revoke_timeout again.
func TestReadBackResumesWithTheGrownBound(t *testing.T) {
	defer func(n int64) { readBackMinPiece = n }(readBackMinPiece)
	readBackMinPiece = 1 // pieces of 3 offsets
	fake := &fakeTxnTopic{prefix: "r"}
	in, logs := cacheInput(t, fake)
	readBackMinPiece = 1
	base := in.conf.RevokeTimeout

	// Assignment 1: the pieces [21, 24) and [18, 21) are read; [15, 18)
	// runs out of its bound, then the session ends.
	ctx, cancel := context.WithCancel(context.Background())
	attempts := 0
	fake.fail = func(lo, _ int64) error {
		if lo >= 18 {
			return nil
		}
		attempts++
		if attempts == 2 {
			cancel()
			return fmt.Errorf("not done within its bound: %w", context.Canceled)
		}
		return fmt.Errorf("not done within its bound: %w", context.DeadlineExceeded)
	}
	require.True(t, in.ends.check([16]byte{3}, 24, 30))
	assert.Equal(t, ids(9, 12), in.readBackIDs(ctx, 24))
	asked, bounds := fake.reset()
	assert.Equal(t, [][2]int64{{21, 24}, {18, 21}, {15, 18}, {15, 18}}, asked)
	require.Len(t, bounds, 4)
	assert.Greater(t, bounds[3], 3*base/2, "the second attempt's bound is doubled")
	assert.Contains(t, logs.String(), "from offset 18 on are remembered")

	// Assignment 2, the same start: only [12, 18) is read, and its first
	// attempt starts from the grown bound.
	fake.fail = nil
	require.True(t, in.ends.check([16]byte{3}, 24, 30))
	assert.Equal(t, ids(6, 12), in.readBackIDs(context.Background(), 24))
	asked, bounds = fake.reset()
	assert.Equal(t, [][2]int64{{15, 18}, {12, 15}}, asked)
	require.Len(t, bounds, 2)
	assert.Greater(t, bounds[0], 3*base/2, "the new assignment's first attempt has the grown bound")
	// Quick answers bring it back to revoke_timeout.
	assert.Equal(t, base, in.readBound.get(base))
}

func TestGrowBoundGrowsCapsAndShrinks(t *testing.T) {
	var b growBound
	base := time.Second
	assert.Equal(t, base, b.get(base))
	b.ranOut(base, 3*time.Second)
	assert.Equal(t, 2*time.Second, b.get(base))
	b.ranOut(2*time.Second, 3*time.Second)
	assert.Equal(t, 3*time.Second, b.get(base), "capped")
	b.done(3*time.Second, 2*time.Second, base)
	assert.Equal(t, 3*time.Second, b.get(base), "done in more than half: kept")
	b.done(3*time.Second, time.Second, base)
	assert.Equal(t, 1500*time.Millisecond, b.get(base), "done within half: halved")
	b.done(1500*time.Millisecond, 0, base)
	assert.Equal(t, base, b.get(base), "not below base")
}

// The cache keeps 2 × resend_window offsets below the highest start.
func TestEndCacheKeepsOnlyTheWindow(t *testing.T) {
	var c endCache
	require.True(t, c.check([16]byte{}, 100, -1))
	c.add(80, 100, []endAt{{81, "a"}, {91, "b"}, {99, "c"}}, 12)
	assert.Equal(t, [][2]int64{{80, 88}}, c.gaps(80, 100))
	assert.Equal(t, []string{"b", "c"}, c.ids(88, 100))
	c.add(100, 104, []endAt{{101, "d"}}, 12)
	assert.Equal(t, [][2]int64{{80, 92}}, c.gaps(80, 104), "trimmed to [92, 104)")
	assert.Equal(t, []string{"c", "d"}, c.ids(92, 104))
	c.add(110, 112, nil, 12)
	assert.Equal(t, [][2]int64{{104, 110}}, c.gaps(100, 112), "[100, 104) and [110, 112) kept")
}

// A listing of start and end offsets that runs out of its bound (a broker
// that accepts connections and never answers, as a starved one) doubles
// the bound the next listing starts from — the next assignment's too.
func TestListingOffsetsKeepsTheGrownBound(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	var held []net.Conn
	var hmu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hmu.Lock()
			held = append(held, c) // never answered
			hmu.Unlock()
		}
	}()
	t.Cleanup(func() {
		hmu.Lock()
		defer hmu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)

	in, _ := cacheInput(t, &fakeTxnTopic{prefix: "r"})
	base := 100 * time.Millisecond
	in.conf.RevokeTimeout = base
	in.mu.Lock()
	in.adm, in.asm = kadm.NewClient(cl), newAssembler(testConfig())
	in.mu.Unlock()
	require.Equal(t, base, in.listBound.get(base))

	// The assignment ends (ctx) long after the first listing ran out.
	ctx, cancel := context.WithTimeout(context.Background(), 30*base)
	defer cancel()
	offsets := map[string]map[int32]kgo.Offset{"shop.transaction": {0: kgo.NewOffset().At(5)}}
	got, err := in.AdjustOffsets(ctx, offsets)
	require.NoError(t, err)
	assert.Equal(t, offsets, got, "nothing listed: the offsets as given")
	assert.GreaterOrEqual(t, in.listBound.get(base), 2*base, "the next listing starts from the grown bound")
}

// Only a read-back attempt that ran out of its bound grows the bound: one
// that failed otherwise (no client could be made) keeps it and is retried
// after a pause, not at once.
func TestReadBackGrowsItsBoundOnlyWhenItRanOut(t *testing.T) {
	fake := &fakeTxnTopic{prefix: "r"}
	in, logs := cacheInput(t, fake)
	base := in.conf.RevokeTimeout
	failures := 0
	fake.fail = func(int64, int64) error {
		if failures < 2 {
			failures++
			return fmt.Errorf("creating a client: %w", net.ErrClosed)
		}
		return nil
	}
	began := time.Now()
	require.True(t, in.ends.check([16]byte{4}, 24, 30))
	assert.Equal(t, ids(6, 12), in.readBackIDs(context.Background(), 24))
	asked, bounds := fake.reset()
	assert.Equal(t, [][2]int64{{12, 24}, {12, 24}, {12, 24}}, asked)
	require.Len(t, bounds, 3)
	assert.LessOrEqual(t, bounds[2], base, "failures that did not run out keep the bound")
	assert.Equal(t, base, in.readBound.get(base))
	assert.GreaterOrEqual(t, time.Since(began), readBackPause(1)+readBackPause(2), "paused between attempts")
	assert.Contains(t, logs.String(), "(attempt 2)")
}

// A broker slower than the bound: each attempt reads only 4 offsets of the
// piece before it runs out. The next attempt goes on from where the last
// stopped, so the piece is read in ceil(12/4) attempts; starting over from
// the piece's first offset each time, it would never be read (the attempt
// cap below stands in for "never").
func TestReadBackGoesOnFromWhereAnAttemptRanOut(t *testing.T) {
	fake := &fakeTxnTopic{prefix: "r"}
	in, logs := cacheInput(t, fake)
	const perAttempt = 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	readEndsFn = func(r *endReader, rctx context.Context, lo, hi int64) ([]endAt, int64, error) {
		if calls++; calls > 10 {
			cancel() // never done: stop the read-back
		}
		stop := min(lo+perAttempt, hi)
		got, _, _ := fake.readEnds(r, rctx, lo, stop)
		if stop < hi {
			return got, stop, fmt.Errorf("not done within its bound: %w", context.DeadlineExceeded)
		}
		return got, hi, nil
	}
	require.True(t, in.ends.check([16]byte{6}, 24, 30))
	assert.Equal(t, ids(6, 12), in.readBackIDs(ctx, 24), "every id of the piece, in offset order, once")
	asked, _ := fake.reset()
	assert.Equal(t, [][2]int64{{12, 16}, {16, 20}, {20, 24}}, asked, "each attempt goes on from the last one's offset")
	assert.Contains(t, logs.String(), "read up to offset 16, going on from there")
	assert.NotContains(t, logs.String(), "only the ids")
}

// The real reader keeps its client across the attempts of a piece: an
// attempt that runs out (here: the piece's later offsets not written yet)
// returns what it read and where it stopped; the next attempt goes on from
// there with the same client. Asked for another offset, it starts a client
// there.
func TestEndReaderGoesOnWithItsClient(t *testing.T) {
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 1})
	txns := func(from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			id := "r" + itoa(int64(i))
			recs = append(recs,
				&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzBegin(id)},
				&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzEnd(id, "test.orders", 1)})
		}
		return recs
	}
	w.rawProduce(txns(0, 3)...) // BEGIN of r<i> at 2i, its END at 2i+1
	conf, err := ConfigSpec().ParseYAML(w.yaml("g-endreader", "resend_window: 6\n"), nil)
	require.NoError(t, err)
	in, err := New(conf, service.MockResources())
	require.NoError(t, err)
	r := &endReader{in: in}
	defer r.close()

	short, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	got, reached, err := r.read(short, 0, 12)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int64(6), reached, "read up to the log end")
	assert.Equal(t, []endAt{{off: 1, id: "r0"}, {off: 3, id: "r1"}, {off: 5, id: "r2"}}, got)
	cl := r.cl
	require.NotNil(t, cl)

	w.rawProduce(txns(3, 6)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, reached, err = r.read(ctx, reached, 12)
	require.NoError(t, err)
	assert.Equal(t, int64(12), reached)
	assert.Same(t, cl, r.cl, "the same client goes on")
	assert.Equal(t, []endAt{{off: 7, id: "r3"}, {off: 9, id: "r4"}, {off: 11, id: "r5"}}, got, "only what the first attempt had not read")

	got, _, err = r.read(ctx, 2, 4)
	require.NoError(t, err)
	assert.NotSame(t, cl, r.cl, "another offset: another client")
	assert.Equal(t, []endAt{{off: 3, id: "r1"}}, got)
}
