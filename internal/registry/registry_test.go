package registry

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetSharesOneRegistryPerResources(t *testing.T) {
	res := service.MockResources()
	a, b := Get(res), Get(res)
	require.Same(t, a, b)
	a.PublishCommitted("t/0", 10)
	v, ok := b.Committed("t/0")
	require.True(t, ok)
	assert.Equal(t, int64(10), v)

	other := Get(service.MockResources())
	_, ok = other.Committed("t/0")
	assert.False(t, ok, "separate resources must not share state")
}

func TestCommittedOnlyMovesForward(t *testing.T) {
	r := New()
	w := r.Watch()
	defer w.Close()
	moved := func() map[string]int64 {
		m, _ := w.Take()
		return m
	}
	r.PublishCommitted("p", 5)
	assert.Equal(t, map[string]int64{"p": 5}, moved())
	r.PublishCommitted("p", 3)
	r.PublishCommitted("p", 5)
	assert.Empty(t, moved(), "only a forward move is told")
	r.PublishCommitted("p", 7)
	r.PublishCommitted("p", 9)
	assert.Equal(t, map[string]int64{"p": 9}, moved(), "the newest")
	r.PublishCommitted("p", 10)
	w.Drop("p")
	assert.Empty(t, moved(), "dropped before it was taken")
	v, _ := r.Committed("p")
	assert.Equal(t, int64(10), v)
}

// An output publishes under its own lock: the registry only records, and
// an input that does not take from its watch never holds up a publish or
// a stale check; the input is signalled once, however many moves wait,
// and finds every one when it takes.
func TestWatchesAreFilledWithoutCallingTheInputs(t *testing.T) {
	r := New()
	r.Assign("cdc/0")
	a, b := r.Watch(), r.Watch()
	defer a.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			r.PublishCommitted("cdc/0", int64(i))
			r.PublishCommitted("cdc/"+strconv.Itoa(1+i%3), int64(i))
			r.Stale("other", 1)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing waited for an input that does not read its watch")
	}
	for _, w := range []*Watch{a, b} {
		select {
		case <-w.C():
		default:
			t.Fatal("the watch was not signalled")
		}
		moved, unclaimed := w.Take()
		assert.Equal(t, map[string]int64{"cdc/0": 999, "cdc/1": 999, "cdc/2": 997, "cdc/3": 998}, moved)
		assert.Equal(t, []Unclaimed{{"cdc/1", []string{"cdc/0"}}, {"cdc/2", []string{"cdc/0"}}, {"cdc/3", []string{"cdc/0"}}, {"other", []string{"cdc/0"}}},
			sortedUnclaimed(unclaimed), "each unclaimed key once")
		select {
		case <-w.C():
			t.Fatal("signalled again with nothing new")
		default:
		}
	}
	b.Close()
	r.PublishCommitted("cdc/0", 5000)
	moved, _ := b.Take()
	assert.Empty(t, moved, "a closed watch gets nothing")
	moved, _ = a.Take()
	assert.Equal(t, map[string]int64{"cdc/0": 5000}, moved)
}

func sortedUnclaimed(u []Unclaimed) []Unclaimed {
	sort.Slice(u, func(i, j int) bool { return u[i].Key < u[j].Key })
	return u
}

func TestFenceCallsOutputsThenResetsAndForgets(t *testing.T) {
	r := New()
	r.EnableTracking()
	assert.True(t, r.Tracking())
	r.PublishCommitted("p", 4)

	var mu sync.Mutex
	var order []string
	r.AddFencer(func(_ context.Context, p string) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "fence:"+p)
		return nil
	})
	r.AddFencer(func(_ context.Context, p string) error { return errors.New("boom " + p) })
	r.OnFence(func(p string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "reset:"+p)
	})
	err := r.Fence(context.Background(), "p")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom p")
	assert.Equal(t, []string{"fence:p", "reset:p"}, order)
	_, ok := r.Committed("p")
	assert.False(t, ok, "a fenced partition starts again from what its next owner publishes")
}

func TestProgressWithoutProvider(t *testing.T) {
	r := New()
	_, ok, err := r.Progress(context.Background(), "p")
	require.NoError(t, err)
	assert.False(t, ok)
	r.SetProgress(func(_ context.Context, p string) (int64, bool, error) { return 77, true, nil })
	v, ok, err := r.Progress(context.Background(), "p")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, int64(77), v)
}

func TestAssignmentEpochs(t *testing.T) {
	r := New()
	assert.Equal(t, uint64(0), r.Epoch("p"), "never assigned")
	assert.False(t, r.Stale("p", 0), "nothing is stale before the first assignment")
	e1 := r.Assign("p")
	assert.Equal(t, uint64(1), e1)
	assert.Equal(t, e1, r.Epoch("p"))
	assert.False(t, r.Stale("p", e1), "the current assignment is live")
	assert.Equal(t, uint64(1), r.Assign("q"), "epochs are per partition")

	// A fence ends the current assignment before the outputs are fenced:
	// a fencer already sees the epoch as stale.
	var staleDuringFence bool
	r.AddFencer(func(_ context.Context, p string) error {
		staleDuringFence = r.Stale(p, e1)
		return nil
	})
	require.NoError(t, r.Fence(context.Background(), "p"))
	assert.True(t, staleDuringFence, "the fenced epoch is recorded before the outputs drop the partition")
	assert.True(t, r.Stale("p", e1), "a late message of the fenced assignment")
	assert.False(t, r.Stale("q", 1), "fencing p leaves q alone")

	e2 := r.Assign("p")
	assert.Equal(t, uint64(2), e2)
	assert.False(t, r.Stale("p", e2), "the new assignment is live")
	assert.True(t, r.Stale("p", e1), "the older assignment stays stale")
}

func TestFenceOfAnUnassignedPartitionRecordsNoEpoch(t *testing.T) {
	r := New()
	require.NoError(t, r.Fence(context.Background(), "p"))
	assert.False(t, r.Stale("p", 0), "no assignment was fenced")
}

type unclaimedReport struct {
	key     string
	claimed []string
}

// watchUnclaimed returns what a watch received of unclaimed keys, in order.
func watchUnclaimed(r *Registry) func() []unclaimedReport {
	w := r.Watch()
	var got []unclaimedReport
	return func() []unclaimedReport {
		_, u := w.Take()
		for _, x := range u {
			got = append(got, unclaimedReport{x.Key, x.Claimed})
		}
		return append([]unclaimedReport(nil), got...)
	}
}

// TestUnclaimedPartitionKeysAreReported: a key the contract uses that no
// input assigned, while inputs assigned others, is reported once, with the
// keys the inputs did assign.
func TestUnclaimedPartitionKeysAreReported(t *testing.T) {
	r := New()
	reports := watchUnclaimed(r)

	// No input claims anything (a file input, say): nothing to compare.
	r.PublishCommitted("orders", 5)
	assert.False(t, r.Stale("orders", 1))
	assert.Empty(t, reports())

	r.Assign("cdc/1")
	r.Assign("cdc/0")
	r.PublishCommitted("cdc/0", 7)
	assert.False(t, r.Stale("cdc/1", 1))
	assert.Empty(t, reports(), "claimed keys are not reported")

	// A message stamped by an input arrives under another key.
	assert.False(t, r.Stale("shop/0", 1), "an unclaimed key is reported, not dropped")
	assert.False(t, r.Stale("shop/0", 1))
	// An unstamped message proves nothing.
	assert.False(t, r.Stale("other", 0))
	// The output publishes under a key nobody claimed.
	r.PublishCommitted("orders", 9)
	r.PublishCommitted("orders", 12)
	r.PublishCommitted("shop/0", 3)
	assert.Equal(t, []unclaimedReport{
		{"shop/0", []string{"cdc/0", "cdc/1"}},
		{"orders", []string{"cdc/0", "cdc/1"}},
	}, reports(), "each key once")

	// Staleness itself is unchanged.
	require.NoError(t, r.Fence(context.Background(), "cdc/0"))
	assert.True(t, r.Stale("cdc/0", 1))
}

// TestUnclaimedReportsAreBounded: keys derived from the data must not grow
// the registry without end.
func TestUnclaimedReportsAreBounded(t *testing.T) {
	r := New()
	reports := watchUnclaimed(r)
	for i := range 20 {
		r.Assign("cdc/" + strconv.Itoa(i))
	}
	for i := range 10000 {
		r.Stale("txn-"+strconv.Itoa(i), 1)
	}
	got := reports()
	assert.Len(t, got, maxUnclaimed)
	assert.Len(t, got[0].claimed, maxClaimedListed, "the claimed list is capped")
	r.Epochs.mu.Lock()
	assert.Len(t, r.Epochs.unclaimed, maxUnclaimed)
	r.Epochs.mu.Unlock()
}

// One assembler's EndFunc reaches the input; with none, or with two, there
// is none to trust.
func TestTxnEnds(t *testing.T) {
	r := New()
	assert.Nil(t, r.TxnEnds())
	r.SetTxnEnds(func(*service.Message) bool { return true })
	require.NotNil(t, r.TxnEnds())
	assert.True(t, r.TxnEnds()(service.NewMessage(nil)))
	r.SetTxnEnds(func(*service.Message) bool { return false })
	assert.Nil(t, r.TxnEnds(), "two assemblers registered")
}

func TestLeases(t *testing.T) {
	r := New()
	now := time.Now()
	ok, until := r.Leased("t/0", now)
	assert.True(t, ok, "a partition no input leases may be committed")
	assert.True(t, until.IsZero())

	r.Renew([]string{"t/0", "t/1"}, now.Add(time.Second))
	ok, _ = r.Leased("t/0", now)
	assert.True(t, ok)
	ok, _ = r.Leased("t/0", now.Add(time.Second))
	assert.False(t, ok, "the lease ends at until")

	r.Renew([]string{"t/0"}, now.Add(-time.Second))
	ok, until = r.Leased("t/0", now)
	assert.True(t, ok, "a lease never moves back")
	assert.Equal(t, now.Add(time.Second), until)

	r.Unlease([]string{"t/1"})
	ok, until = r.Leased("t/1", now.Add(time.Hour))
	assert.True(t, ok, "a released partition is no longer leased by the input")
	assert.True(t, until.IsZero())
}
