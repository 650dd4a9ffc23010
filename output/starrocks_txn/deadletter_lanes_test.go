package starrocks_txn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// Dead letters go in one lane per partition (deadletter.go): one that can
// never be written holds back only its own partition.

// refusingDL refuses, as the Kafka dead letter refuses a record over
// max_message_bytes, every batch of a partition in refused; it writes the
// others.
type refusingDL struct {
	fakeDL
	rmu      sync.Mutex
	refused  map[string]bool
	attempts map[string]int
}

func newRefusingDL(parts ...string) *refusingDL {
	d := &refusingDL{refused: map[string]bool{}, attempts: map[string]int{}}
	for _, p := range parts {
		d.refused[p] = true
	}
	return d
}

func (d *refusingDL) WriteBatch(ctx context.Context, b service.MessageBatch) error {
	p, _ := b[0].MetaGet(contract.KeyPartition)
	d.rmu.Lock()
	d.attempts[p]++
	refused := d.refused[p]
	d.rmu.Unlock()
	if refused {
		return fmt.Errorf("writing a transaction of %d records (aborted): a record is larger than max_message_bytes (1000) or the broker's message.max.bytes: %w", len(b), kerr.MessageTooLarge)
	}
	return d.fakeDL.WriteBatch(ctx, b)
}

func (d *refusingDL) tries(p string) int {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	return d.attempts[p]
}

func (d *refusingDL) accept(p string) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	delete(d.refused, p)
}

// exactly_once: partition p0's poisoned transaction is refused by
// dead_letter for good; p1's, poisoned afterwards, is written, and p1's later
// transactions commit, within bounded time. p0's poisoned transaction and
// the one after it stay unacknowledged and uncommitted (nothing lost, and
// nothing of p0 commits ahead of its dead letter); the refusal is logged
// once at error level with the transaction and what to do. Once the dead
// letter takes it, p0 goes on.
func TestOneRefusedDeadLetterHoldsOnlyItsPartition(t *testing.T) {
	f := newFakeSR()
	dl := newRefusingDL("p0")
	var logs logBuffer
	o, _, _ := eoOutput(t, f, dl, "retry_backoff: { initial_interval: 5ms, max_interval: 20ms }\n", withLog(&logs))
	s := newSrc("asm")
	a1 := writeAsync(o, poisonedMsgs(s, "p0", "a1"))
	require.Eventually(t, func() bool { return dl.tries("p0") >= 1 }, 10*time.Second, time.Millisecond, "p0's dead letter is tried")
	a2 := writeAsync(o, service.MessageBatch(txnMsgs(s, "p0", "a2", 1)))
	b1 := writeAsync(o, poisonedMsgs(s, "p1", "b1"))
	b2 := writeAsync(o, service.MessageBatch(txnMsgs(s, "p1", "b2", 2)))
	waitAll(t, []chan error{b1, b2}, 10*time.Second)
	assert.Equal(t, []string{"b1"}, dl.txnIDs(), "p1's dead letter is written past p0's")
	assert.Equal(t, map[string]int{"b2": 1}, countIDs(f.rows("b")), "p1's later transaction commits; p0's waits for its dead letter")

	require.Eventually(t, func() bool { return dl.tries("p0") >= 4 }, 10*time.Second, time.Millisecond, "p0's dead letter is retried")
	for _, ch := range []chan error{a1, a2} {
		select {
		case <-ch:
			t.Fatal("a batch of p0 was acknowledged while its poisoned transaction is not in dead_letter")
		default:
		}
	}
	var refusals []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, `Writing source transaction \"a1\" of partition p0@asm`) {
			refusals = append(refusals, l)
		}
	}
	require.Len(t, refusals, 1, "reported once at error level, not at every retry")
	assert.Contains(t, refusals[0], "refuses it for good")
	assert.Contains(t, refusals[0], "raise the dead_letter output's max_message_bytes")
	assert.Contains(t, refusals[0], "MESSAGE_TOO_LARGE")

	dl.accept("p0")
	waitAll(t, []chan error{a1, a2}, 10*time.Second)
	assert.Equal(t, []string{"b1", "a1"}, dl.txnIDs())
	assert.Equal(t, map[string]int{"a2": 1, "b2": 1}, countIDs(f.rows("b")))
}

// The lanes in the core, stepped: while p0's dead letter is being written
// (and failing), p1's is handed out; p0's next one only once p0's write
// ends, in order. With exactly_once p0's complete transaction after its
// poisoned one stays out of commit cycles (active, not queued) until the
// poisoned one is in dead_letter; p1's is queued at once.
func TestCoreDeadLetterLanesPerPartition(t *testing.T) {
	st := newStepper(t, eoYAML, true)
	s := newSrc("a1")
	st.write(poisonedMsgs(s, "p0", "x1")...)
	st.write(poisonedMsgs(s, "p0", "x2")...)
	st.write(txnMsgs(s, "p0", "x3", 3)...)
	first := st.k.nextDeadLetter()
	require.NotNil(t, first)
	assert.Equal(t, "x1", first.id)
	assert.Nil(t, st.k.nextDeadLetter(), "p0's next waits for its head")

	st.write(poisonedMsgs(s, "p1", "y1")...)
	st.write(txnMsgs(s, "p1", "y2", 4)...)
	assert.Equal(t, []string{"x1:poisoned", "x2:poisoned", "x3:active"}, st.states("a1", "p0"), "x3 is held out of commit cycles")
	assert.Equal(t, []string{"y1:poisoned", "y2:active"}, st.states("a1", "p1"))
	other := st.k.nextDeadLetter()
	require.NotNil(t, other, "p1's dead letter goes past p0's, which is still being written")
	assert.Equal(t, "y1", other.id)
	st.k.deadLetterEnded(other, true)
	st.check()
	st.advance(time.Second)
	st.k.tick(st.now)
	assert.Equal(t, []string{"y2:queued"}, st.states("a1", "p1"), "p1 goes on (y1 resolved)")
	assert.Equal(t, "x3:active", st.states("a1", "p0")[2], "p0's later transaction still waits")

	st.k.deadLetterEnded(first, true)
	second := st.k.nextDeadLetter()
	require.NotNil(t, second)
	assert.Equal(t, "x2", second.id, "in order within the partition")
	st.k.deadLetterEnded(second, true)
	st.check()
	assert.Nil(t, st.k.nextDeadLetter())
	assert.Empty(t, st.k.dlLanes)
	st.advance(time.Second)
	st.k.tick(st.now)
	assert.Equal(t, []string{"x3:queued"}, st.states("a1", "p0"), "x1 and x2 resolved, x3 frozen")
}

// A size refusal is told apart from other dead_letter failures, whether the
// Kafka error arrives wrapped or only as text (through an output layer
// that flattened it).
func TestDeadLetterAdviceNamesASizeRefusal(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("writing a transaction of 2 records (aborted): %w", kerr.MessageTooLarge),
		fmt.Errorf("producing: %w", kerr.RecordListTooLarge),
		fmt.Errorf("%s", kerr.MessageTooLarge.Error()),
	} {
		assert.Contains(t, deadLetterAdvice(err), "refuses it for good", err.Error())
	}
	for _, err := range []error{context.DeadlineExceeded, fmt.Errorf("dial tcp: connection refused"), kerr.UnknownTopicOrPartition} {
		assert.NotContains(t, deadLetterAdvice(err), "for good", err.Error())
	}
}
