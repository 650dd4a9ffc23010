package kafka

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func TestParseTopics(t *testing.T) {
	ts, err := ParseTopics(" cdc:4, maxwell ,dbserver1.transaction:1,")
	require.NoError(t, err)
	assert.Equal(t, []Topic{{"cdc", 4}, {"maxwell", 1}, {"dbserver1.transaction", 1}}, ts)
	ts, err = ParseTopics("")
	require.NoError(t, err)
	assert.Empty(t, ts)
	for in, want := range map[string]string{
		"cdc:0":     `--topics entry "cdc:0": the partition count "0" is not a whole number from 1`,
		"cdc:four":  `--topics entry "cdc:four": the partition count "four" is not a whole number from 1`,
		":4":        `--topics entry ":4" has no topic name: write name:partitions, e.g. cdc:4`,
		"cdc,cdc:2": "--topics names cdc twice",
	} {
		_, err := ParseTopics(in)
		assert.EqualError(t, err, want, in)
	}
}

// produce writes one committed and one aborted Kafka transaction to
// partition 0 of topic.
func produce(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("kafka-cmd-test"),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer cl.Close()
	ctx := context.Background()
	for _, c := range []struct {
		value string
		end   kgo.TransactionEndTry
	}{{"committed", kgo.TryCommit}, {"aborted", kgo.TryAbort}} {
		require.NoError(t, cl.BeginTransaction())
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte(c.value)}).FirstErr())
		require.NoError(t, cl.EndTransaction(ctx, c.end))
	}
}

// consume reads topic as a member of group, read_committed, until it has
// seen the end of every partition, and returns the values; it commits what
// it read.
func consume(t *testing.T, addr, topic, group string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit())
	require.NoError(t, err)
	defer cl.Close()
	var values []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)); n++ })
		if n == 0 && len(values) > 0 {
			break
		}
	}
	require.NoError(t, cl.CommitUncommittedOffsets(context.Background()))
	return values
}

func groupOffset(t *testing.T, addr, group, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	require.NoError(t, err)
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(context.Background(), group)
	require.NoError(t, err)
	o, ok := offs.Lookup(topic, 0)
	require.True(t, ok, "group %s has an offset for %s/0", group, topic)
	return o.At
}

// The broker serves producer transactions (an aborted one is never read
// under read_committed), consumer groups and their offsets, and the topics
// it was told to create.
func TestBrokerServesTransactionsAndGroups(t *testing.T) {
	b, err := Start(Options{Addr: "127.0.0.1:0", Topics: []Topic{{"cdc", 2}, {"maxwell", 1}}})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, []Topic{{"cdc", 2}, {"maxwell", 1}}, b.Created)
	topics, err := b.Topics(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []Topic{{"cdc", 2}, {"maxwell", 1}}, topics)

	produce(t, b.Addr(), "cdc")
	assert.Equal(t, []string{"committed"}, consume(t, b.Addr(), "cdc", "g"))
	// The offset after the one record read.
	assert.Equal(t, int64(1), groupOffset(t, b.Addr(), "g", "cdc"))
}

// With --data-dir the topics, the records, the producers' transactions and
// the groups' offsets outlive a restart; without, nothing does.
func TestDataDirKeepsStateAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	b, err := Start(Options{Addr: "127.0.0.1:0", Topics: []Topic{{"cdc", 2}}, DataDir: dir})
	require.NoError(t, err)
	produce(t, b.Addr(), "cdc")
	assert.Equal(t, []string{"committed"}, consume(t, b.Addr(), "cdc", "g"))
	b.Close()

	b, err = Start(Options{Addr: "127.0.0.1:0", Topics: []Topic{{"cdc", 4}, {"more", 1}}, DataDir: dir})
	require.NoError(t, err)
	defer b.Close()
	assert.Equal(t, []Topic{{"cdc", 2}}, b.Kept, "an existing topic is kept as it is")
	assert.Equal(t, []Topic{{"more", 1}}, b.Created)
	assert.Equal(t, int64(1), groupOffset(t, b.Addr(), "g", "cdc"), "the group's offset survived")
	assert.Equal(t, []string{"committed"}, consume(t, b.Addr(), "cdc", "other"), "the records survived, the aborted one still invisible")

	mem, err := Start(Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	defer mem.Close()
	topics, err := mem.Topics(context.Background())
	require.NoError(t, err)
	assert.Empty(t, topics, "memory only: a new broker starts empty")
}

func TestTakenAddressSaysWhatToDo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = Start(Options{Addr: l.Addr().String()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address already in use; another process listens on "+l.Addr().String()+
		" (a Kafka broker, another `kafka` command?): stop it, or give --addr 127.0.0.1:0 for a free port and point KAFKA_BROKERS there")
}

// syncBuffer is the command's output, written by its goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The command prints its address and topics, serves until it is stopped
// (SIGINT and SIGTERM cancel the same context), and says it stopped.
func TestCommandRunsUntilStopped(t *testing.T) {
	var out syncBuffer
	app := &cli.App{Writer: &out, Commands: []*cli.Command{Command()}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- app.RunContext(ctx, []string{"bin", "kafka", "--addr", "127.0.0.1:0", "--topics", "cdc:4,maxwell"})
	}()
	addrRE := regexp.MustCompile(`kafka: listening on (127\.0\.0\.1:\d+) \(in-process Kafka for local work, not for production; memory only`)
	require.Eventually(t, func() bool { return addrRE.MatchString(out.String()) }, 30*time.Second, 20*time.Millisecond, "the address is printed")
	assert.Contains(t, out.String(), "  topic cdc: 4 partitions, created\n  topic maxwell: 1 partition, created\n")
	addr := addrRE.FindStringSubmatch(out.String())[1]
	assert.Contains(t, out.String(), "KAFKA_BROKERS="+addr)
	produce(t, addr, "cdc")
	assert.Equal(t, []string{"committed"}, consume(t, addr, "cdc", "g"))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not stop")
	}
	assert.Contains(t, out.String(), "kafka: stopped\n")
	_, err := net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the listener is closed")
}
