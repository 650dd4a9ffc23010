package debezium_txn

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The read-back of the last resend_window ENDs before the start returns
// them in offset order, and when revoke_timeout runs out it keeps the
// newest ones (those a connector restart re-sends) and names, in an error,
// the offset from which ids are remembered.
func TestReadBackKeepsTheNewestIDsWhenItTimesOut(t *testing.T) {
	defer func(n int64) { readBackMinPiece = n }(readBackMinPiece)
	readBackMinPiece = 1 // pieces of 3 records
	w := newKWorld(t, workload.DebeziumOptions{Partitions: 1})
	var recs []*kgo.Record
	var all []string
	for i := 0; i < 12; i++ {
		id := "r" + itoa(int64(i))
		all = append(all, id)
		recs = append(recs,
			&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzBegin(id)},
			&kgo.Record{Topic: w.src.TransactionTopic(), Value: dbzEnd(id, "test.orders", 1)})
	}
	w.rawProduce(recs...) // BEGIN of r<i> at 2i, its END at 2i+1
	logs := &syncBuffer{}
	res := service.MockResources(service.MockResourcesOptUseLogger(
		service.NewLoggerFromSlog(slog.New(slog.NewTextHandler(logs, nil)))))
	// revoke_timeout bounds the whole read-back: long enough for 8 fetches
	// on a loaded machine under the race detector.
	yaml := strings.Replace(w.yaml("g-readback", "resend_window: 6\n"), "revoke_timeout: 3s", "revoke_timeout: 5s", 1)
	conf, err := ConfigSpec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	in, err := New(conf, res)
	require.NoError(t, err)

	assert.Equal(t, all[6:], in.readBackIDs(context.Background(), 24), "the last 6 ENDs, oldest first")
	assert.NotContains(t, logs.String(), "Re-reading")

	// Fetches below offset 18 are answered only once the read-back gave
	// up (slower than any revoke_timeout): the pieces [21, 24) and
	// [18, 21) are read first and kept.
	gaveUp := make(chan struct{})
	w.cluster.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.cluster.KeepControl()
		for _, rt := range req.(*kmsg.FetchRequest).Topics {
			for _, rp := range rt.Partitions {
				if rp.FetchOffset < 18 {
					w.cluster.SleepControl(func() { <-gaveUp })
				}
			}
		}
		return nil, nil, false
	})
	ids := in.readBackIDs(context.Background(), 24)
	close(gaveUp)
	assert.Equal(t, all[9:], ids, "the newest ENDs are kept")
	assert.Contains(t, logs.String(), "from offset 18 on are remembered")
}
