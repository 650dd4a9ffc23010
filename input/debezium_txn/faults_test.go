package debezium_txn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/starrocks-txn/benthos-starrocks/internal/registry"
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
			// The sink stands for an exactly_once output (registry): a
			// reset of the group's connection can end the group session
			// (franz-go's heartbeat dies with it), and the partitions are
			// then lost, not committed. The next session reads again what
			// the lost one emitted; what the sink applied before the fence
			// is skipped by its progress, what the fence caught is dropped
			// and comes again. Without them an append-only table counted
			// re-read rows twice and a re-read transaction came twice.
			s := newSink(t)
			var mu sync.Mutex
			in, logs := w.newInputWith("g-fault", "", func(reg *registry.Registry) {
				s.stale = reg.Stale
				reg.AddFencer(func(context.Context, string) error {
					mu.Lock() // a batch being applied is applied before the fence ends
					defer mu.Unlock()
					return nil
				})
				reg.SetProgress(func(_ context.Context, p string) (int64, bool, error) {
					mu.Lock()
					defer mu.Unlock()
					off, ok := s.applied[p]
					if !ok && p == w.src.TransactionTopic() {
						// Nothing of the database partition applied: a
						// progress of none, side rows may have one.
						return -1, true, nil
					}
					return off, ok, nil
				})
			})
			take := func(b service.MessageBatch) {
				mu.Lock()
				defer mu.Unlock()
				s.take(b)
			}
			readUntilFn(t, in, 30*time.Second, take, w.converged(s))
			// The floors reach the partitions' ends once the fault is over.
			// Reading goes on meanwhile: a session the fault ended after
			// everything was read emits again what it had not committed
			// (never stalled: it waits for those rows' acknowledgements).
			ends := w.endOffsets()
			floorsAtEnds := func() bool {
				got := w.committedOffsets("g-fault")
				for p, e := range ends {
					if got[p] != e {
						return false
					}
				}
				return true
			}
			readUntilFn(t, in, 40*time.Second, take, floorsAtEnds)
			mu.Lock()
			defer mu.Unlock()
			require.True(t, w.converged(s)(), "the tables stay converged")
			for id, n := range s.txns {
				require.Equal(t, 1, n, "transaction %s applied once", id)
			}
			t.Logf("sessions lost: %d; rows applied: %d; batches dropped as fenced: %d",
				strings.Count(logs.String(), "Lost partitions"), s.rows, s.dropped)
			require.Positive(t, fired.Load(), "the fault fired")
		})
	}
}
