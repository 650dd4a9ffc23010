package kafka

// Home of G50 (ARCHITECTURE.md §11.2): read_committed by default: a record of an aborted or open
// Kafka transaction is never delivered. Main test: TestIsolationLevelAndAbortedTransactions.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Field names of the consumer-group settings, the same in every input that
// reads with a consumer group (kafka_txn, debezium_txn). Their spec fields,
// with one description and lint rule each, are internal/kafka/consumer's
// (GroupFields).
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
	FieldMetadataMaxAge         = "metadata_max_age"
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
	// DefaultMetadataMaxAge bounds how long a new topic matching the
	// subscription (or a partition added to a topic) goes unread: the
	// product's freshness is about a second, and a transaction that touches
	// a table created meanwhile waits for its topic to be read. franz-go's
	// own default, 5m, would hold it that long; a metadata request every
	// 10s is nothing to a broker (consumer/spec.go).
	DefaultMetadataMaxAge = "10s"
)

// RevokeBelowRebalanceMsg is the start-time error (and a lint text) when
// revoke_timeout is not below rebalance_timeout.
const RevokeBelowRebalanceMsg = "revoke_timeout (%s) must be below rebalance_timeout (%s): the revoke must finish before the group gives up on this member"

// HeartbeatBelowSessionMsg is the start-time error (and a lint text) when
// heartbeat_interval is not below half of session_timeout. The group would
// remove the member between two heartbeats at session_timeout; and from
// half of it on, the membership lease (GroupLease) never lets the output
// commit: a heartbeat's write confirms the heartbeat before it, and a
// confirmed heartbeat lets commits start for half of session_timeout after
// it was sent, so every confirmation would arrive already expired.
const HeartbeatBelowSessionMsg = "heartbeat_interval (%s) must be below half of session_timeout (%s): a heartbeat confirms the membership the previous one claimed, and the output commits a partition only within half of session_timeout of that claim, so from half of it on no commit would ever start; a quarter of session_timeout or less keeps commits from waiting at all (the defaults are 3s and 45s)"

// HeartbeatLeaseGapMsg is the lint warning when heartbeat_interval is above
// a quarter of session_timeout but below half of it: the lease lapses for
// part of every heartbeat interval, and commits wait for the next
// heartbeat.
const HeartbeatLeaseGapMsg = "heartbeat_interval (%s) is above a quarter of session_timeout (%s): the membership lease that lets the output commit lapses for %s of every heartbeat interval, and commits wait for the next heartbeat then; a quarter of session_timeout or less keeps commits from waiting"

// LeaseGap is how long of every heartbeat interval the membership lease is
// over for heartbeat interval hb and session timeout st: 0 at hb ≤ st/4.
// A heartbeat's write (at t + hb) confirms the one sent at t, which lets
// commits start until t + st/2; the next write, at t + 2·hb, renews it.
func LeaseGap(hb, st time.Duration) time.Duration {
	return max(2*hb-st/2, 0)
}

// GroupLintRule is the lint rule of an input's consumer-group fields:
// revoke_timeout below rebalance_timeout and heartbeat_interval below half
// of session_timeout, with the start-time texts (durations written as Go
// writes them); extra are more entries of the rule's list, each a Bloblang
// query giving a text or null. A value that does not parse is the field
// rule's to report.
func GroupLintRule(extra ...string) string {
	entries := append([]string{
		fmt.Sprintf(`if $rv != null && $rb != null && $rv >= $rb { %q.format(%s, %s) } else { null }`,
			RevokeBelowRebalanceMsg, BloblangDuration("$rv"), BloblangDuration("$rb")),
		fmt.Sprintf(`if $hb != null && $st != null && $hb > 0 && $st > 0 && $hb * 2 >= $st { %q.format(%s, %s) } else { null }`,
			HeartbeatBelowSessionMsg, BloblangDuration("$hb"), BloblangDuration("$st")),
	}, extra...)
	return fmt.Sprintf(`let rv = this.revoke_timeout.or(%q).string().trim().parse_duration().catch(null)
let rb = this.rebalance_timeout.or(%q).string().trim().parse_duration().catch(null)
let hb = this.heartbeat_interval.or(%q).string().trim().parse_duration().catch(null)
let st = this.session_timeout.or(%q).string().trim().parse_duration().catch(null)
root = [
  %s,
].filter(v -> v != null)`, DefaultRevokeTimeout, DefaultRebalanceTimeout, DefaultHeartbeatInterval, DefaultSessionTimeout,
		strings.Join(entries, ",\n  "))
}

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
	if 2*g.HeartbeatInterval >= g.SessionTimeout {
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
		kgo.RetryTimeoutFn(g.retryTimeout),
		kgo.SessionTimeout(g.SessionTimeout),
		kgo.RebalanceTimeout(g.RebalanceTimeout),
		kgo.HeartbeatInterval(g.HeartbeatInterval),
		kgo.FetchMaxWait(g.FetchMaxWait),
		kgo.FetchMaxPartitionBytes(g.FetchMaxPartitionBytes),
	}
}

// otherRequestsRetryTimeout is franz-go's default retry timeout of requests
// other than the group's join, sync and heartbeat.
const otherRequestsRetryTimeout = 30 * time.Second

// retryTimeout is how long franz-go may re-send a request that failed. A
// heartbeat is never re-sent inside its request: each re-send is a new
// write, which the membership lease (GroupLease) takes as the confirmation
// of the write before it, so retries of a heartbeat the coordinator keeps
// refusing (NOT_COORDINATOR, for as long as session_timeout by default)
// would extend the lease past the session the coordinator is timing out. A
// failed heartbeat goes back to franz-go's heartbeat loop instead, which
// rejoins the group (a JoinGroup breaks the chain of confirmations): a
// coordinator that moved costs a rejoin, never a commit racing a new
// owner. Join and sync keep franz-go's default (session_timeout), every
// other request its 30 s. (franz-go takes 0 as no limit, so a heartbeat
// gets 1 ns: the first failure is final.)
func (g GroupConfig) retryTimeout(key int16) time.Duration {
	switch kmsg.Key(key) {
	case kmsg.Heartbeat:
		return time.Nanosecond
	case kmsg.JoinGroup, kmsg.SyncGroup:
		return g.SessionTimeout
	}
	return otherRequestsRetryTimeout
}
