package txnassembler

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/contract"
)

// newProc builds a processor from a YAML config against fresh mock
// resources.
func newProc(t *testing.T, yaml string) (*Processor, *service.Resources) {
	t.Helper()
	conf, err := processorSpec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	res := service.MockResources()
	p, err := newFromConfig(conf, res)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p, res
}

// kafkaMsg is a record of a Kafka partition as an input delivers it.
func kafkaMsg(topic string, partition int32, offset int64, body string) *service.Message {
	m := service.NewMessage([]byte(body))
	m.MetaSetMut("kafka_topic", topic)
	m.MetaSetMut("kafka_partition", partition)
	m.MetaSetMut("kafka_offset", offset)
	m.MetaSetMut("kafka_key", "k")
	return m
}

// run processes one batch and returns the single batch that comes out (nil
// when everything was dropped).
func run(t *testing.T, p *Processor, msgs ...*service.Message) service.MessageBatch {
	t.Helper()
	out, err := p.ProcessBatch(context.Background(), service.MessageBatch(msgs))
	require.NoError(t, err)
	require.LessOrEqual(t, len(out), 1, "exactly one batch (or none) per batch in")
	if len(out) == 0 {
		return nil
	}
	require.NotEmpty(t, out[0], "an empty batch must not be returned")
	return out[0]
}

// stamped is a message as the output sees it.
type stamped struct {
	contract.Meta
	Body string
	Err  error
}

func read(t *testing.T, msg *service.Message) stamped {
	t.Helper()
	m, err := contract.Read(msg)
	require.NoError(t, err)
	b, err := msg.AsBytes()
	require.NoError(t, err)
	return stamped{Meta: m, Body: string(b), Err: msg.GetError()}
}

func readAll(t *testing.T, batch service.MessageBatch) []stamped {
	t.Helper()
	out := make([]stamped, len(batch))
	for i, m := range batch {
		out[i] = read(t, m)
	}
	return out
}

// row decodes a row body.
func row(t *testing.T, body string) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &v), "body %q", body)
	return v
}

func envelope(partition int, txn, typ, db, table, js string) string {
	v := map[string]any{"partition": partition, "txnId": txn, "type": typ}
	if db != "" {
		v["database"] = db
	}
	if table != "" {
		v["table"] = table
	}
	if js != "" {
		v["json"] = js
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// copyBatch copies every message of a batch (metadata and body are shared
// until written): what a test needs to run one input through two
// processors, or to keep it, since the processor stamps its input in place.
func copyBatch(b service.MessageBatch) service.MessageBatch {
	out := make(service.MessageBatch, len(b))
	for i, m := range b {
		out[i] = m.Copy()
	}
	return out
}
