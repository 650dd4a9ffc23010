package produce

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit/kafka"
	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// readAll reads every committed record of topics.
func readAll(t *testing.T, brokers []string, topics ...string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topics...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	var recs []*kgo.Record
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r); n++ })
		if n == 0 && len(recs) > 0 {
			break
		}
	}
	return recs
}

// Envelope transactions go to an existing topic, partitions in turn, each
// whole in one partition and one Kafka transaction; the result's model is
// the sample's, which the same seed and partitions reproduce.
func TestEnvelopeIntoAnExistingTopic(t *testing.T) {
	k := kafka.New(t, kafka.Topic("cdc", 3, nil))
	res, err := Run(context.Background(), Options{Brokers: k.Brokers(), Txns: 30, Seed: 5})
	require.NoError(t, err)
	assert.Equal(t, []string{"cdc"}, res.Topics)
	assert.Equal(t, int32(3), res.Partitions, "the topic's own count")
	assert.Equal(t, int64(30), res.Txns)

	recs := readAll(t, k.Brokers(), "cdc")
	require.Len(t, recs, int(res.Records))
	type ev struct {
		Partition int32  `json:"partition"`
		TxnID     string `json:"txnId"`
		Type      string `json:"type"`
	}
	ends := 0
	for _, r := range recs {
		assert.True(t, r.Attrs.IsTransactional())
		var e ev
		require.NoError(t, json.Unmarshal(r.Value, &e))
		assert.Equal(t, string(r.Key), e.TxnID)
		if e.Type == "TXN_END" {
			ends++
		}
		assert.Equal(t, r.Partition, e.Partition, "a source transaction stays in its partition")
	}
	assert.Equal(t, 30, ends)

	again, err := Model(FormatEnvelope, 3, 5, 30)
	require.NoError(t, err)
	assert.Equal(t, res.Model.Snapshot(), again.Snapshot(), "the same seed and partitions give the same transactions")
	other, err := Model(FormatEnvelope, 3, 6, 30)
	require.NoError(t, err)
	assert.NotEqual(t, res.Model.Snapshot(), other.Snapshot(), "another seed other ones")
}

// Maxwell rows go to a topic produce creates; the last row of each
// transaction carries commit: true.
func TestMaxwellCreatesItsTopic(t *testing.T) {
	k := kafka.New(t)
	res, err := Run(context.Background(), Options{Brokers: k.Brokers(), Format: FormatMaxwell, Partitions: 2, Txns: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"maxwell"}, res.Topics)
	assert.Equal(t, int32(2), res.Partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers()...))
	require.NoError(t, err)
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(context.Background(), "maxwell")
	require.NoError(t, err)
	assert.Len(t, topics["maxwell"].Partitions, 2)

	commits := 0
	for _, r := range readAll(t, k.Brokers(), "maxwell") {
		var row struct {
			Database string `json:"database"`
			XID      int64  `json:"xid"`
			Commit   bool   `json:"commit"`
		}
		require.NoError(t, json.Unmarshal(r.Value, &row))
		assert.Equal(t, workload.Database, row.Database)
		assert.Positive(t, row.XID)
		if row.Commit {
			commits++
		}
	}
	assert.Equal(t, 10, commits)
}

// Debezium: the connector's topics are created and written, and the result
// names the topics config/debezium.yaml must be told.
func TestDebeziumWritesAConnectorsTopics(t *testing.T) {
	k := kafka.New(t)
	res, err := Run(context.Background(), Options{Brokers: k.Brokers(), Format: FormatDebezium, Txns: 12})
	require.NoError(t, err)
	assert.Equal(t, "dbserver1.transaction", res.TransactionTopic)
	assert.Contains(t, res.Topics, "dbserver1.test.orders")
	assert.Equal(t, int64(12), res.Txns)
	var begins int
	for _, r := range readAll(t, k.Brokers(), res.TransactionTopic) {
		if bytes.Contains(r.Value, []byte(`"BEGIN"`)) {
			begins++
		}
	}
	assert.Equal(t, 12, begins)
	var out bytes.Buffer
	PrintResult(&out, res)
	assert.Contains(t, out.String(), "DEBEZIUM_TOPICS="+res.Topics[0])
}

func TestBadOptions(t *testing.T) {
	_, err := Run(context.Background(), Options{Brokers: []string{"127.0.0.1:1"}, Format: "avro"})
	assert.EqualError(t, err, `--format "avro" is not one of envelope, maxwell, debezium`)
	_, err = Run(context.Background(), Options{})
	assert.EqualError(t, err, "no broker to write to: give --brokers host:port")
	_, err = NewSample(FormatEnvelope, 0, 1)
	assert.Error(t, err)
	assert.Equal(t, []string{"a:1", "b:2"}, splitBrokers(" a:1,,b:2 "))
}
