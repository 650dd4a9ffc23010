package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Field names of the consumer-group settings, the same in every input that
// reads with a consumer group (kafka_txn, debezium_txn). Each input writes
// its own descriptions: the spec fields stay with the input.
const (
	FieldConsumerGroup          = "consumer_group"
	FieldIsolationLevel         = "isolation_level"
	FieldStartFromOldest        = "start_from_oldest"
	FieldCommitPeriod           = "commit_period"
	FieldRevokeTimeout          = "revoke_timeout"
	FieldSessionTimeout         = "session_timeout"
	FieldRebalanceTimeout       = "rebalance_timeout"
	FieldHeartbeatInterval      = "heartbeat_interval"
	FieldFetchMaxWait           = "fetch_max_wait"
	FieldFetchMaxPartitionBytes = "fetch_max_partition_bytes"
)

// Isolation levels accepted by isolation_level.
const (
	IsolationReadCommitted   = "read_committed"
	IsolationReadUncommitted = "read_uncommitted"
)

// Defaults of the consumer-group settings.
const (
	DefaultCommitPeriod           = "1s"
	DefaultRevokeTimeout          = "30s"
	DefaultSessionTimeout         = "45s"
	DefaultRebalanceTimeout       = "60s"
	DefaultHeartbeatInterval      = "3s"
	DefaultFetchMaxWait           = "500ms"
	DefaultFetchMaxPartitionBytes = "1MiB"
)

// RevokeBelowRebalanceMsg is the start-time error (and a lint text) when
// revoke_timeout is not below rebalance_timeout.
const RevokeBelowRebalanceMsg = "revoke_timeout (%s) must be below rebalance_timeout (%s): the revoke must finish before the group gives up on this member"

// HeartbeatBelowSessionMsg is the start-time error (and a lint text) when
// heartbeat_interval is not below session_timeout: the group would remove
// the member between two of its heartbeats.
const HeartbeatBelowSessionMsg = "heartbeat_interval (%s) must be below session_timeout (%s): the group would remove this member between two heartbeats; a third of it or less is usual"

// GroupConfig is how an input takes part in its consumer group and fetches:
// the parsed consumer-group fields.
type GroupConfig struct {
	ConsumerGroup          string
	ReadCommitted          bool
	StartFromOldest        bool
	CommitPeriod           time.Duration
	RevokeTimeout          time.Duration
	SessionTimeout         time.Duration
	RebalanceTimeout       time.Duration
	HeartbeatInterval      time.Duration
	FetchMaxWait           time.Duration
	FetchMaxPartitionBytes int32
}

// GroupConfigFromParsed reads the consumer-group fields of an input whose
// spec holds all of them, with the checks across them (a revoke must end
// before the rebalance does, a heartbeat must come before the session
// ends).
func GroupConfigFromParsed(conf *service.ParsedConfig) (g GroupConfig, err error) {
	if g.ConsumerGroup, err = conf.FieldString(FieldConsumerGroup); err != nil {
		return
	}
	if g.ConsumerGroup == "" {
		err = errors.New("consumer_group must not be empty")
		return
	}
	var iso string
	if iso, err = conf.FieldString(FieldIsolationLevel); err != nil {
		return
	}
	switch iso {
	case IsolationReadCommitted:
		g.ReadCommitted = true
	case IsolationReadUncommitted:
	default:
		err = fmt.Errorf("isolation_level %q is not one of %s, %s", iso, IsolationReadCommitted, IsolationReadUncommitted)
		return
	}
	if g.StartFromOldest, err = conf.FieldBool(FieldStartFromOldest); err != nil {
		return
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{
		{FieldCommitPeriod, &g.CommitPeriod}, {FieldRevokeTimeout, &g.RevokeTimeout},
		{FieldSessionTimeout, &g.SessionTimeout}, {FieldRebalanceTimeout, &g.RebalanceTimeout},
		{FieldHeartbeatInterval, &g.HeartbeatInterval}, {FieldFetchMaxWait, &g.FetchMaxWait},
	} {
		if *d.dst, err = DurationField(conf, d.name); err != nil {
			return
		}
	}
	if g.RevokeTimeout >= g.RebalanceTimeout {
		err = fmt.Errorf(RevokeBelowRebalanceMsg, g.RevokeTimeout, g.RebalanceTimeout)
		return
	}
	if g.HeartbeatInterval >= g.SessionTimeout {
		err = fmt.Errorf(HeartbeatBelowSessionMsg, g.HeartbeatInterval, g.SessionTimeout)
		return
	}
	if g.FetchMaxPartitionBytes, err = ByteSizeField(conf, FieldFetchMaxPartitionBytes); err != nil {
		return
	}
	return
}

// Rebalance is how an input follows its assignment: franz-go's callbacks
// and the membership lease they and the group requests renew.
type Rebalance struct {
	Assigned, Revoked, Lost func(context.Context, *kgo.Client, map[string][]int32)
	// AdjustOffsets may move the start of newly assigned partitions.
	AdjustOffsets func(context.Context, map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error)
	Lease         *GroupLease
}

// ConsumerOpts are the kgo options of the group settings and the input's
// rebalance callbacks. Offsets are committed by the input itself, never by
// franz-go, and rebalance callbacks never run between a poll and the moment
// its records are handed over, so a revoked partition never receives
// records of its old assignment. The input adds its topics.
func (g GroupConfig) ConsumerOpts(r Rebalance) []kgo.Opt {
	iso := kgo.ReadUncommitted()
	if g.ReadCommitted {
		iso = kgo.ReadCommitted()
	}
	reset := kgo.NewOffset().AtEnd()
	if g.StartFromOldest {
		reset = kgo.NewOffset().AtStart()
	}
	return []kgo.Opt{
		kgo.ConsumerGroup(g.ConsumerGroup),
		kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(reset),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(r.Assigned),
		kgo.OnPartitionsRevoked(r.Revoked),
		kgo.OnPartitionsLost(r.Lost),
		kgo.AdjustFetchOffsetsFn(r.AdjustOffsets),
		kgo.WithHooks(r.Lease),
		kgo.SessionTimeout(g.SessionTimeout),
		kgo.RebalanceTimeout(g.RebalanceTimeout),
		kgo.HeartbeatInterval(g.HeartbeatInterval),
		kgo.FetchMaxWait(g.FetchMaxWait),
		kgo.FetchMaxPartitionBytes(g.FetchMaxPartitionBytes),
	}
}
