package kafka

import (
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groupSpec holds the consumer-group fields with their defaults.
func groupSpec() *service.ConfigSpec {
	return service.NewConfigSpec().Fields(
		service.NewStringField(FieldConsumerGroup),
		service.NewStringField(FieldIsolationLevel).Default(IsolationReadCommitted),
		service.NewBoolField(FieldStartFromOldest).Default(true),
		service.NewDurationField(FieldCommitPeriod).Default(DefaultCommitPeriod),
		service.NewDurationField(FieldRevokeTimeout).Default(DefaultRevokeTimeout),
		service.NewDurationField(FieldSessionTimeout).Default(DefaultSessionTimeout),
		service.NewDurationField(FieldRebalanceTimeout).Default(DefaultRebalanceTimeout),
		service.NewDurationField(FieldHeartbeatInterval).Default(DefaultHeartbeatInterval),
		service.NewDurationField(FieldFetchMaxWait).Default(DefaultFetchMaxWait),
		service.NewStringField(FieldFetchMaxPartitionBytes).Default(DefaultFetchMaxPartitionBytes),
	)
}

func parseGroup(t *testing.T, yaml string) (GroupConfig, error) {
	t.Helper()
	conf, err := groupSpec().ParseYAML("consumer_group: g\n"+yaml, nil)
	require.NoError(t, err)
	return GroupConfigFromParsed(conf)
}

func TestGroupConfigDefaults(t *testing.T) {
	g, err := parseGroup(t, "")
	require.NoError(t, err)
	assert.Equal(t, GroupConfig{
		ConsumerGroup: "g", ReadCommitted: true, StartFromOldest: true,
		CommitPeriod: time.Second, RevokeTimeout: 30 * time.Second, SessionTimeout: 45 * time.Second,
		RebalanceTimeout: time.Minute, HeartbeatInterval: 3 * time.Second, FetchMaxWait: 500 * time.Millisecond,
		FetchMaxPartitionBytes: 1 << 20,
	}, g)
	assert.NotEmpty(t, g.ConsumerOpts(Rebalance{Lease: NewGroupLease(g.SessionTimeout, func(time.Time) {})}))
}

// TestGroupConfigRefuses: each bad value or combination is refused with a
// text naming the field.
func TestGroupConfigRefuses(t *testing.T) {
	for yaml, want := range map[string]string{
		"isolation_level: serializable\n":                `isolation_level "serializable" is not one of read_committed, read_uncommitted`,
		"commit_period: 0s\n":                            `commit_period must be positive, got "0s"`,
		"fetch_max_wait: -1s\n":                          `fetch_max_wait must be positive, got "-1s"`,
		"revoke_timeout: 60s\n":                          "revoke_timeout (1m0s) must be below rebalance_timeout (1m0s)",
		"heartbeat_interval: 45s\n":                      "heartbeat_interval (45s) must be below half of session_timeout (45s)",
		"fetch_max_partition_bytes: 2GiB\n":              "fetch_max_partition_bytes must be a positive byte size",
		"session_timeout: 10s\nheartbeat_interval: 1m\n": "heartbeat_interval (1m0s) must be below half of session_timeout (10s)",
		"session_timeout: 10s\nheartbeat_interval: 5s\n": "heartbeat_interval (5s) must be below half of session_timeout (10s)",
	} {
		_, err := parseGroup(t, yaml)
		require.Error(t, err, yaml)
		assert.Contains(t, err.Error(), want, yaml)
	}
	conf, err := groupSpec().ParseYAML("consumer_group: ''\n", nil)
	require.NoError(t, err)
	_, err = GroupConfigFromParsed(conf)
	assert.EqualError(t, err, "consumer_group must not be empty")
}
