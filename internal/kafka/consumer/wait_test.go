package consumer

import (
	"context"
	"strings"
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

	// Nothing more is said once the assignment arrived.
	time.Sleep(2 * w.c.waitLogAfter())
	assert.Equal(t, 1, strings.Count(w.logs.String(), line))
}

// An assignment that comes at once is not reported as a wait.
func TestQuickAssignmentIsNotLoggedAsAWait(t *testing.T) {
	c := newCluster(t, 1)
	w := newWorld(t, testYAML(c, "g-quick", "session_timeout: 4s\nheartbeat_interval: 200ms\n"), nil)
	w.connect()
	require.Eventually(t, func() bool { return len(w.in.held()) == 1 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(w.c.waitLogAfter() + 200*time.Millisecond)
	assert.NotContains(t, w.logs.String(), "No assignment from consumer_group")
}
