package consumer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A topic created after the start that the subscription's regular
// expressions match is read within metadata_max_age (and the rebalance
// that adds it): franz-go's own default would look again after 5 minutes.
func TestNewMatchingTopicIsReadWithinMetadataMaxAge(t *testing.T) {
	c := newCluster(t, 1)
	const maxAge = time.Second
	w := newWorld(t, testYAML(c, "g-metadata", "metadata_max_age: 1s\n"), func(sc *Config) {
		sc.Regexp = true
		sc.Topics = []string{`^cdc(\..+)?$`}
		sc.CheckTopics = nil
	})
	w.connect()
	produce(t, c, testTopic, 0, "old")
	b, ack := w.read(10 * time.Second)
	require.Len(t, b, 1)
	require.NoError(t, ack(context.Background(), nil))

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "cdc.new_table")
	require.NoError(t, err)
	created := time.Now()
	produce(t, c, "cdc.new_table", 0, "new")
	b, _ = w.read(20 * time.Second)
	took := time.Since(created)
	require.Len(t, b, 1)
	v, _ := b[0].MetaGet(MetaTopic)
	assert.Equal(t, "cdc.new_table", v)
	t.Logf("read %s after the topic was created (metadata_max_age %s)", took, maxAge)
	// metadata_max_age, then a rebalance that adds the topic and a fetch:
	// well under franz-go's default of 5 minutes whatever the load.
	assert.Less(t, took, maxAge+10*time.Second)
}
