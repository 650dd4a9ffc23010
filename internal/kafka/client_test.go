package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestCheckCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("unreachable brokers name seed_brokers", func(t *testing.T) {
		c := ClientConfig{SeedBrokers: []string{"127.0.0.1:1"}, ClientID: "t"}
		err := c.CheckCluster(ctx, nil, "topics", "topic [x]")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "connecting to kafka: seed_brokers [127.0.0.1:1] are unreachable or refused the connection")
	})

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "present"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "s3cret"))
	require.NoError(t, err)
	t.Cleanup(cluster.Close)
	conf := func(user, pass string) ClientConfig {
		return ClientConfig{SeedBrokers: cluster.ListenAddrs(), ClientID: "t",
			SASL: []SASL{{Mechanism: SASLPlain, Username: user, Password: pass}}}
	}

	t.Run("a refused login names sasl and hides the password", func(t *testing.T) {
		err := conf("admin", "wrong-pw").CheckCluster(ctx, nil, "topics", "topic [present]")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "authentication")
		assert.Contains(t, err.Error(), "sasl")
		assert.NotContains(t, err.Error(), "wrong-pw")
	})

	t.Run("a missing topic is named with its field", func(t *testing.T) {
		err := conf("admin", "s3cret").CheckCluster(ctx, nil, "topic", "topic [present]", "present", "absent")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `topics ["absent"] do not exist on the cluster at seed_brokers [`)
		assert.Contains(t, err.Error(), "create them or fix topic")
	})

	t.Run("reachable, authenticated, topics present", func(t *testing.T) {
		require.NoError(t, conf("admin", "s3cret").CheckCluster(ctx, nil, "topics", "", "present"))
		require.NoError(t, conf("admin", "s3cret").CheckCluster(ctx, nil, "topics", ""), "no topics: a ping only")
	})
}
