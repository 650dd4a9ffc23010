package debezium_txn

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/testkit/workload"
)

// The input's Kafka calls under faults (the fault matrix): an offset commit
// refused, a commit that is slow, fetches and offset listings whose
// connection is reset. Every cell keeps the promises: nothing lost (the
// tables converge), nothing emitted twice in one run, and the floors reach
// the partitions' ends once the fault is over (never stalled). A commit
// whose reply is lost after it was applied is the refused cell from the
// input's point of view: the commit of an absolute floor is idempotent and
// retried at commit_period.
func TestKafkaFaultMatrix(t *testing.T) {
	cases := []struct {
		name string
		key  kmsg.Key
		// fault handles one request; it returns false to let the cluster
		// serve it.
		fault func(w *kworld, req kmsg.Request) (kmsg.Response, error, bool)
		times int64
	}{
		{name: "offset commit refused", key: kmsg.OffsetCommit, times: 5, fault: func(_ *kworld, kreq kmsg.Request) (kmsg.Response, error, bool) {
			req := kreq.(*kmsg.OffsetCommitRequest)
			resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
			resp.SetVersion(req.GetVersion())
			for _, rt := range req.Topics {
				st := kmsg.NewOffsetCommitResponseTopic()
				st.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					sp := kmsg.NewOffsetCommitResponseTopicPartition()
					sp.Partition = rp.Partition
					sp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
					st.Partitions = append(st.Partitions, sp)
				}
				resp.Topics = append(resp.Topics, st)
			}
			return resp, nil, true
		}},
		{name: "offset commit connection reset", key: kmsg.OffsetCommit, times: 3, fault: func(*kworld, kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("reset"), true
		}},
		{name: "offset commit slow", key: kmsg.OffsetCommit, times: 2, fault: func(*kworld, kmsg.Request) (kmsg.Response, error, bool) {
			// Real time: the slowness is the fault (a broker that takes
			// longer than many commit periods to answer).
			time.Sleep(700 * time.Millisecond)
			return nil, nil, false
		}},
		{name: "fetch connection reset", key: kmsg.Fetch, times: 4, fault: func(*kworld, kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("reset"), true
		}},
		{name: "list offsets connection reset", key: kmsg.ListOffsets, times: 3, fault: func(*kworld, kmsg.Request) (kmsg.Response, error, bool) {
			return nil, errors.New("reset"), true
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newKWorld(t, workload.DebeziumOptions{Partitions: 2, SnapshotOrders: 5, LargeEvery: 4, ResendRatio: 0.2, Seed: 31})
			w.produce(40)
			var fired atomic.Int64
			w.cluster.ControlKey(int16(c.key), func(req kmsg.Request) (kmsg.Response, error, bool) {
				if fired.Load() >= c.times {
					return nil, nil, false
				}
				w.cluster.KeepControl()
				fired.Add(1)
				return c.fault(w, req)
			})
			in, _ := w.newInput("g-fault", "")
			s := newSink(t)
			readUntil(t, in, s, 30*time.Second, w.converged(s))
			for id, n := range s.txns {
				require.Equal(t, 1, n, "transaction %s emitted once", id)
			}
			ends := w.endOffsets()
			require.Eventually(t, func() bool {
				got := w.committedOffsets("g-fault")
				for p, e := range ends {
					if got[p] != e {
						return false
					}
				}
				return true
			}, 40*time.Second, 50*time.Millisecond, "the floors reach the ends after the fault")
			require.Positive(t, fired.Load(), "the fault fired")
		})
	}
}
