package consumer

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A member killed without leaving the group (a static member closes without
// LeaveGroup, as a SIGKILL leaves a member) keeps its partitions until its
// session expires; a member that starts meanwhile waits for its assignment,
// and says so once, naming the group, the wait and session_timeout.
func TestWaitForAnAssignmentIsLogged(t *testing.T) {
	c := newCluster(t, 1)
	const group = "g-wait"
	joined := make(chan struct{}, 1)
	dead, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(testTopic),
		kgo.InstanceID("killed"), kgo.SessionTimeout(3*time.Second), kgo.RebalanceTimeout(3*time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			if len(a) > 0 {
				joined <- struct{}{}
			}
		}))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go dead.PollRecords(ctx, 1)
	select {
	case <-joined:
	case <-ctx.Done():
		t.Fatal("the first member never joined")
	}
	dead.Close() // a static member leaves nothing behind: its session runs on

	w := newWorld(t, testYAML(c, group, ""), nil)
	timers := w.recordWaitTimers(true)
	start := time.Now()
	w.connect()
	require.Eventually(t, func() bool { return len(w.in.held()) == 1 }, 15*time.Second, 20*time.Millisecond,
		"the partition comes once the killed member's session expired")
	waited := time.Since(start)
	const line = `No assignment from consumer_group \"g-wait\" after waiting`
	logs := w.logs.String()
	require.Equal(t, 1, strings.Count(logs, line), "one line while the member waits (it waited %s):\n%s", waited, logs)
	assert.Contains(t, logs, "a previous member may hold the partitions until session_timeout (1s) expires")
	assert.Greater(t, waited, w.c.waitLogAfter(), "the member waited longer than the line's threshold")

	// Nothing more is said once the assignment arrived, even by the wait's
	// timer firing now.
	require.Equal(t, 1, timers.fire(), "one wait, one timer")
	assert.Equal(t, 1, strings.Count(w.logs.String(), line))
}

// An assignment that comes at once is not reported as a wait.
func TestQuickAssignmentIsNotLoggedAsAWait(t *testing.T) {
	c := newCluster(t, 1)
	w := newWorld(t, testYAML(c, "g-quick", "session_timeout: 4s\nheartbeat_interval: 200ms\n"), nil)
	// The wait's timer fires when the test says, after the assignment
	// came, however long the assignment took on a loaded machine.
	timers := w.recordWaitTimers(false)
	w.connect()
	require.Eventually(t, func() bool { return len(w.in.held()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, timers.fire(), "the wait from Connect had its timer")
	assert.NotContains(t, w.logs.String(), "No assignment from consumer_group")
}

// waitTimers are the callbacks of the timers the shell started for its
// waits for an assignment.
type waitTimers struct {
	mu  sync.Mutex
	fns []func()
}

// recordWaitTimers records the shell's wait timers (before Connect); with
// real they also fire after waitLogAfter as usual, else only when fire
// fires them.
func (w *world) recordWaitTimers(real bool) *waitTimers {
	r := &waitTimers{}
	w.c.afterFunc = func(d time.Duration, f func()) *time.Timer {
		r.mu.Lock()
		r.fns = append(r.fns, f)
		r.mu.Unlock()
		if !real {
			d = time.Hour
		}
		return time.AfterFunc(d, f)
	}
	return r
}

// fire runs the callback of every wait timer started so far, as if each
// fired now (again, for one that fired already), and returns how many.
func (r *waitTimers) fire() int {
	r.mu.Lock()
	fns := append([]func(){}, r.fns...)
	r.mu.Unlock()
	for _, f := range fns {
		f()
	}
	return len(fns)
}
