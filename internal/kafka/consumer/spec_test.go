package consumer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every topics entry is split on commas, as in Benthos's own Kafka inputs.
func TestTopicsEntriesAreSplitOnCommas(t *testing.T) {
	conf, err := testSpec().ParseYAML("seed_brokers: [ b:9092 ]\nconsumer_group: g\ntopics: [ 'a, b', ' c ', ',' ]\n", nil)
	require.NoError(t, err)
	topics, err := ParseTopics(conf, "none")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, topics)

	conf, err = testSpec().ParseYAML("seed_brokers: [ b:9092 ]\nconsumer_group: g\ntopics: [ ' , ' ]\n", nil)
	require.NoError(t, err)
	_, err = ParseTopics(conf, "topics must name a topic")
	assert.EqualError(t, err, "topics must name a topic")
}

// The group fields' defaults, metadata_max_age's among them.
func TestConfigDefaults(t *testing.T) {
	conf, err := testSpec().ParseYAML("seed_brokers: [ b:9092 ]\nconsumer_group: g\ntopics: [ t ]\n", nil)
	require.NoError(t, err)
	c, err := ConfigFromParsed(conf, "none")
	require.NoError(t, err)
	assert.Equal(t, "10s", c.MetadataMaxAge.String())
	assert.Equal(t, []string{"t"}, c.Topics)
	assert.Equal(t, "g", c.ConsumerGroup)

	conf, err = testSpec().ParseYAML("seed_brokers: [ b:9092 ]\nconsumer_group: g\ntopics: [ t ]\nmetadata_max_age: 61m\n", nil)
	require.NoError(t, err)
	_, err = ConfigFromParsed(conf, "none")
	assert.EqualError(t, err, `metadata_max_age must be at most 1h0m0s, got "61m"`)
}
